// LIBMF as its authors build it (mf.cpp from PyPI's `libmf` sdist, compiled with the flags of
// LIBMF's own Makefile: -O3 -march=native -fopenmp -DUSEOMP -DUSEAVX), driven on the same TSV
// ratings and the same held-out split as `yarn-submit mf --test-fraction F --seed S`, for
// scripts/bench_scale_out.py.
//
//   libmf_driver RATINGS THREADS ITERS RANK LAMBDA ETA TEST_FRACTION SEED
//
// Prints one JSON line: seconds per iteration (a run of 1 + ITERS iterations minus a run of 1,
// so that loading, LIBMF's shuffling and block set-up are not counted), the load time, and the
// held-out RMSE of the 1 + ITERS model (predicting the global mean plus the factors' dot product,
// as `mf` does: LIBMF's own scaling is left on, as its users run it).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mf.h"

using namespace mf;

// splitmix64's finaliser: the same as ps_runtime's `mix64`, so the held-out split is the same.
static uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static bool held_out(uint32_t user, uint32_t item, uint64_t seed, double fraction) {
    if (fraction <= 0) return false;
    uint64_t h = mix64((((uint64_t)user) << 32 | item) ^ seed) >> 11;
    return (double)h / (double)(1ULL << 53) <= fraction;
}

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s RATINGS THREADS ITERS RANK LAMBDA ETA TEST_FRACTION SEED\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    int threads = atoi(argv[2]), iters = atoi(argv[3]), rank = atoi(argv[4]);
    float lambda = (float)atof(argv[5]), eta = (float)atof(argv[6]);
    double fraction = atof(argv[7]);
    uint64_t seed = strtoull(argv[8], nullptr, 10);

    double t0 = now();
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    std::vector<mf_node> train, test;
    std::vector<char> buf(1 << 24);
    std::vector<char> line;
    size_t n;
    mf_int m_users = 0, n_items = 0;
    // A hand-written reader: `user<TAB>item<TAB>rating` lines, ids from 1.
    auto take = [&](const char *s, size_t len) {
        if (len == 0) return;
        char *end;
        unsigned long u = strtoul(s, &end, 10);
        unsigned long i = strtoul(end, &end, 10);
        float r = strtof(end, &end);
        mf_node node{(mf_int)(u - 1), (mf_int)(i - 1), r};
        if ((mf_int)u > m_users) m_users = (mf_int)u;
        if ((mf_int)i > n_items) n_items = (mf_int)i;
        (held_out((uint32_t)u, (uint32_t)i, seed, fraction) ? test : train).push_back(node);
    };
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) {
        size_t start = 0;
        for (size_t k = 0; k < n; k++) {
            if (buf[k] == '\n') {
                if (line.empty()) {
                    buf[k] = 0;
                    take(&buf[start], k - start);
                } else {
                    line.insert(line.end(), buf.begin() + start, buf.begin() + k);
                    line.push_back(0);
                    take(line.data(), line.size() - 1);
                    line.clear();
                }
                start = k + 1;
            }
        }
        line.insert(line.end(), buf.begin() + start, buf.begin() + n);
    }
    if (!line.empty()) {
        line.push_back(0);
        take(line.data(), line.size() - 1);
    }
    fclose(f);
    double load_s = now() - t0;

    mf_problem prob{m_users, n_items, (mf_long)train.size(), train.data()};
    mf_parameter p = mf_get_default_param();
    p.k = rank;
    p.nr_threads = threads;
    p.lambda_p2 = lambda;
    p.lambda_q2 = lambda;
    p.eta = eta;
    p.quiet = true;
    // LIBMF warns that 2 x threads blocks or fewer per dimension slow training (its default is
    // 20): take the fewest that it accepts without the warning.
    if (p.nr_bins <= 2 * threads) p.nr_bins = 2 * threads + 1;

    p.nr_iters = 1;
    double a = now();
    mf_model *one = mf_train(&prob, p);
    double t1 = now() - a;
    mf_destroy_model(&one);

    p.nr_iters = 1 + iters;
    a = now();
    mf_model *model = mf_train(&prob, p);
    double tn = now() - a;

    double sse = 0;
    for (const mf_node &r : test) {
        double e = r.r - mf_predict(model, r.u, r.v);
        sse += e * e;
    }
    double test_rmse = test.empty() ? NAN : std::sqrt(sse / test.size());
    mf_destroy_model(&model);
    printf("{\"peer\": \"libmf\", \"threads\": %d, \"s_per_pass\": %.6f, \"load_s\": %.3f, \"train_ratings\": %zu, "
           "\"test_ratings\": %zu, \"test_rmse\": %.6f, \"passes\": %d}\n",
           threads, (tn - t1) / iters, load_s, train.size(), test.size(), test_rmse, 1 + iters);
    return 0;
}
