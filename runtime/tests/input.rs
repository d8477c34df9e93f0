//! Readers and splits: every record read exactly once for any number of workers, documents never
//! cut, malformed input reported with file and line (or skipped and counted).

use proptest::prelude::*;
use ps_runtime::input::{plan_splits, read_corpus, read_edges, read_ratings, BadRecords, LineReader, RatingFormat};
use ps_runtime::storage::LocalFs;
use std::path::{Path, PathBuf};

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-input-{tag}-{}-{}", std::process::id(), rand_tag()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rand_tag() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn write(p: &Path, s: &str) -> String {
    std::fs::write(p, s).unwrap();
    p.to_string_lossy().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Any files, any line lengths (including empty lines and a missing final newline), any
    /// number of workers: the union of the lines read is exactly the lines of the files.
    #[test]
    fn splits_cover_every_line_once(files in prop::collection::vec(prop::collection::vec("[a-z]{0,12}", 0..40), 1..4),
                                    final_nl in any::<bool>(), n in 1usize..9) {
        let d = dir("split");
        let mut want = Vec::new();
        let mut listed = Vec::new();
        for (i, lines) in files.iter().enumerate() {
            let mut text = lines.iter().enumerate().map(|(j, l)| format!("{i}:{j}:{l}")).collect::<Vec<_>>().join("\n");
            if final_nl && !text.is_empty() { text.push('\n'); }
            let p = write(&d.join(format!("part-{i:05}")), &text);
            want.extend(lines.iter().enumerate().map(|(j, l)| format!("{i}:{j}:{l}")));
            listed.push((p, text.len() as u64));
        }
        let mut got = Vec::new();
        for k in 0..n {
            for s in plan_splits(&listed, k, n) {
                let mut r = LineReader::new(&LocalFs, &s).unwrap();
                while let Some((l, _)) = r.next_line().unwrap() {
                    got.push(l.to_string());
                }
            }
        }
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// UCI docword: for any number of workers every document is read whole by exactly one worker.
    #[test]
    fn docword_documents_are_never_cut(docs in prop::collection::vec(prop::collection::vec((1u32..30, 1u32..4), 1..8), 1..30), n in 1usize..7) {
        let d = dir("docword");
        let mut body = String::new();
        let mut nnz = 0;
        for (i, ws) in docs.iter().enumerate() {
            for (w, c) in ws {
                body += &format!("{} {} {}\n", i + 1, w, c);
                nnz += 1;
            }
        }
        let p = write(&d.join("docword.t.txt"), &format!("{}\n30\n{nnz}\n{body}", docs.len()));
        let mut seen = Vec::new();
        for k in 0..n {
            let (c, _) = read_corpus(&p, None, k, n, BadRecords::Fail).unwrap();
            for doc in c.docs {
                let want: Vec<u32> = docs[doc.id as usize - 1].iter().flat_map(|(w, c)| std::iter::repeat_n(w - 1, *c as usize)).collect();
                prop_assert_eq!(&doc.words, &want, "doc {} incomplete", doc.id);
                seen.push(doc.id);
            }
        }
        seen.sort();
        prop_assert_eq!(seen, (1..=docs.len() as u64).collect::<Vec<_>>());
        let _ = std::fs::remove_dir_all(&d);
    }
}

fn all_ratings(url: &str, n: usize, f: RatingFormat) -> Vec<(u32, u32, f32)> {
    let mut v: Vec<_> = (0..n)
        .flat_map(|k| read_ratings(url, k, n, f, BadRecords::Fail).unwrap().0)
        .map(|r| (r.user, r.item, r.value))
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

#[test]
fn rating_formats_read_the_same_data() {
    let d = dir("ratings");
    let want = vec![(1, 10, 5.0), (1, 20, 3.0), (2, 10, 4.0), (3, 30, 1.5)];
    let tsv = write(&d.join("r.tsv"), "1\t10\t5\t881250949\n1\t20\t3\t1\n2\t10\t4\t0\n\n3\t30\t1.5\t7\n");
    let csv = write(&d.join("r.csv"), "userId,movieId,rating,timestamp\n1,10,5,1\n1,20,3,1\n2,10,4,1\n3,30,1.5,1\n");
    let ml = write(&d.join("ratings.dat"), "1::10::5::978300760\n1::20::3::1\n2::10::4::1\n3::30::1.5::1\n");
    std::fs::create_dir_all(d.join("netflix")).unwrap();
    write(&d.join("netflix/mv_0000010.txt"), "10:\n1,5,2005-09-06\n2,4,2005-05-13\n");
    write(&d.join("netflix/mv_0000020.txt"), "20:\n1,3,2005-09-06\n");
    write(&d.join("netflix/mv_0000030.txt"), "30:\n3,1.5,2005-09-06\n");
    let combined = write(
        &d.join("combined.txt"),
        "10:\n1,5,2005-09-06\n2,4,2005-05-13\n20:\n1,3,2005-09-06\n30:\n3,1.5,2005-09-06\n",
    );
    let nf_dir = d.join("netflix").to_string_lossy().to_string();
    for n in 1..6 {
        for url in [&tsv, &csv, &ml, &nf_dir, &combined] {
            assert_eq!(all_ratings(url, n, RatingFormat::Auto), want, "{url} with {n} workers");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn netflix_splits_far_from_the_movie_header_know_the_movie() {
    let d = dir("netflix-big");
    let mut text = String::from("7:\n");
    for u in 0..20_000 {
        text += &format!("{u},{},2005-01-01\n", 1 + u % 5);
    }
    text += "8:\n1,2,2005-01-01\n";
    let p = write(&d.join("combined_data_1.txt"), &text);
    let all = all_ratings(&p, 7, RatingFormat::Netflix);
    assert_eq!(all.len(), 20_001);
    assert_eq!(all.iter().filter(|r| r.1 == 7).count(), 20_000);
    assert!(all.contains(&(1, 8, 2.0)));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn malformed_lines_name_file_and_line_or_are_skipped() {
    let d = dir("bad");
    let p = write(&d.join("r.tsv"), "1\t2\t3\n4\tx\t5\n6\t7\t8\n9\t1\n");
    let e = read_ratings(&p, 0, 1, RatingFormat::Auto, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("r.tsv:2") && e.contains("item id 'x'"), "{e}");
    // The second worker of two owns line 3 onward and reports line 4 by its absolute number.
    let e = read_ratings(&p, 1, 2, RatingFormat::Auto, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("r.tsv:4") && e.contains("missing rating"), "{e}");
    let (ok, st) = read_ratings(&p, 0, 1, RatingFormat::Auto, BadRecords::Skip).unwrap();
    assert_eq!((ok.len(), st.skipped), (2, 2));

    let g = write(&d.join("g.txt"), "# FromNodeId\tToNodeId\n0\t1\n1 2\n2\tfoo\n");
    let e = read_edges(&g, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("g.txt:4") && e.contains("target node 'foo'"), "{e}");
    let (edges, st) = read_edges(&g, 0, 1, BadRecords::Skip).unwrap();
    assert_eq!((edges.src, edges.dst, st.skipped), (vec![0, 1], vec![1, 2], 1));

    let c = write(&d.join("docword.x.txt"), "2\n5\n3\n1 1 2\n1 9 x\n2 3 1\n");
    let e = read_corpus(&c, None, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("docword.x.txt:5") && e.contains("count 'x'"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Lines across the reader's 1 MiB refills, a line longer than a refill, CRLF endings and no final
/// newline: each worker gets its lines whole, with their byte offsets, and the bytes and text
/// forms agree.
#[test]
fn lines_across_buffer_refills_keep_their_bytes_and_offsets() {
    let d = dir("refill");
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0u64;
    while lines.iter().map(|l| l.len() + 2).sum::<usize>() < 3 << 20 {
        let len = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize; // 0..255, scattered
        lines.push(format!("{i}:{}", "x".repeat(len)));
        if i == 2000 {
            lines.push("y".repeat(5 << 19)); // 2.5 MiB: more than one refill
        }
        i += 1;
    }
    let text = lines.join("\r\n");
    let p = write(&d.join("lines.txt"), &text);
    let starts: Vec<u64> = std::iter::once(0)
        .chain(lines.iter().scan(0u64, |at, l| {
            *at += l.len() as u64 + 2;
            Some(*at)
        }))
        .take(lines.len())
        .collect();
    let want: Vec<(String, u64)> = lines.iter().cloned().zip(starts).collect();
    for n in [1, 3] {
        let mut got = Vec::new();
        for k in 0..n {
            for s in plan_splits(&[(p.clone(), text.len() as u64)], k, n) {
                let (mut bytes, mut text) =
                    (LineReader::new(&LocalFs, &s).unwrap(), LineReader::new(&LocalFs, &s).unwrap());
                while let Some((l, at)) = bytes.next_bytes().unwrap() {
                    let (t, at2) = text.next_line().unwrap().expect("as many text lines");
                    assert_eq!((t.as_bytes(), at2), (l, at));
                    got.push((String::from_utf8(l.to_vec()).unwrap(), at));
                }
                assert!(text.next_line().unwrap().is_none());
            }
        }
        assert!(got == want, "{n} workers: {} lines read, {} written", got.len(), want.len());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// What a file can make a reader allocate is bounded by what the file can justify: absurd counts
/// and headers are `file:line` errors, not multi-gigabyte allocations.
#[test]
fn absurd_sizes_are_refused_with_file_and_line() {
    let d = dir("absurd");
    // One entry asking for four billion tokens (16 GiB of word ids before this check).
    let p = write(&d.join("docword.a.txt"), "1\n3\n1\n1 2 4000000000\n");
    let e = read_corpus(&p, None, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("docword.a.txt:4") && e.contains("count 4000000000"), "{e}");
    // Headers the file cannot hold: NNZ beyond the bytes, a vocabulary beyond the entries.
    let p = write(&d.join("docword.b.txt"), "1\n3\n99999999999\n1 2 1\n");
    let e = read_corpus(&p, None, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("docword.b.txt:3") && e.contains("NNZ 99999999999"), "{e}");
    let p = write(&d.join("docword.c.txt"), "1\n17179869184\n1\n1 2 1\n");
    let e = read_corpus(&p, None, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("docword.c.txt:2") && e.contains("vocabulary size 17179869184"), "{e}");
    // Entries outside the header's ranges.
    let p = write(&d.join("docword.d.txt"), "1\n3\n2\n1 2 1\n1 9 1\n");
    let e = read_corpus(&p, None, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("docword.d.txt:5") && e.contains("word id 9"), "{e}");
    // Netflix ratings get the same finite check as the other formats.
    let p = write(&d.join("mv_1.txt"), "7:\n1,3,2005-01-01\n2,inf,2005-01-01\n");
    let e = read_ratings(&p, 0, 1, RatingFormat::Auto, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("mv_1.txt:3") && e.contains("not finite"), "{e}");
    let p = write(&d.join("r.tsv"), "1\t2\tNaN\n");
    let e = read_ratings(&p, 0, 1, RatingFormat::Auto, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("r.tsv:1") && e.contains("not finite"), "{e}");
    // A file without line breaks is not read into one buffer.
    let big = d.join("one-line.txt");
    std::fs::write(&big, vec![b'7'; ps_runtime::input::MAX_LINE_BYTES + 10]).unwrap();
    let e = read_edges(big.to_str().unwrap(), 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("one-line.txt") && e.contains("longer than 64 MiB"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn corpora_with_vocabularies() {
    let d = dir("corpus");
    write(&d.join("vocab.t.txt"), "apple\nbanana\ncherry\n");
    let p = write(&d.join("docword.t.txt"), "2\n3\n3\n1 1 2\n1 3 1\n2 2 1\n");
    let (c, _) = read_corpus(&p, None, 0, 1, BadRecords::Fail).unwrap();
    assert_eq!(c.vocab_size, 3);
    assert_eq!(c.vocab.unwrap()[2], "cherry");
    assert_eq!(c.docs[0].words, vec![0, 0, 2]);
    let t = write(&d.join("docs.txt"), "b a a\n\nc b\n");
    let mut docs = Vec::new();
    for k in 0..3 {
        let (c, _) = read_corpus(&t, None, k, 3, BadRecords::Fail).unwrap();
        assert_eq!(c.vocab.as_deref(), Some(&["a".to_string(), "b".into(), "c".into()][..]));
        docs.extend(c.docs.into_iter().map(|d| d.words));
    }
    docs.sort();
    assert_eq!(docs, vec![vec![1, 0, 0], vec![2, 1]]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn missing_input_names_the_path() {
    let e = read_edges("/no/such/graph.txt", 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("/no/such/graph.txt"), "{e}");
    let e = read_edges("s3://bucket/x", 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("not supported"), "{e}");
}

/// Compresses `text` with the codec of `name`'s extension into `d/name`.
fn write_compressed(d: &Path, name: &str, text: &str) -> (String, u64) {
    use std::io::Write;
    let p = d.join(name);
    let bytes = match name.rsplit('.').next().unwrap() {
        "gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap()
        }
        "bz2" => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap()
        }
        "zst" => zstd::encode_all(text.as_bytes(), 3).unwrap(),
        x => panic!("no codec {x}"),
    };
    std::fs::write(&p, &bytes).unwrap();
    (p.to_string_lossy().to_string(), bytes.len() as u64)
}

/// gzip, bzip2 and zstd parts read like the plain text they hold, each whole by exactly one
/// worker whatever the number of workers, mixed with plain parts; a bad line in a compressed
/// part is reported by its line number in the decompressed text.
#[test]
fn compressed_inputs_read_like_plain_ones() {
    let d = dir("compressed");
    let line = |u: u32| format!("{u}\t{}\t{}\n", u % 17, 1 + u % 5);
    let text = |r: std::ops::Range<u32>| r.map(line).collect::<String>();
    write(&d.join("part-00000"), &text(0..300));
    let parts = [("part-00001.gz", 300..700), ("part-00002.bz2", 700..900), ("part-00003.zst", 900..1500)];
    let listed: Vec<(String, u64)> = parts.iter().map(|(n, r)| write_compressed(&d, n, &text(r.clone()))).collect();
    let url = d.to_string_lossy().to_string();
    let want: Vec<(u32, u32, f32)> = (0..1500).map(|u| (u, u % 17, (1 + u % 5) as f32)).collect();
    for n in 1..6 {
        assert_eq!(all_ratings(&url, n, RatingFormat::Auto), want, "{n} workers");
        for (p, _) in &listed {
            let owners = (0..n).filter(|&k| plan_splits(&listed, k, n).iter().any(|s| &s.path == p)).count();
            assert_eq!(owners, 1, "{p} with {n} workers");
        }
    }
    let bad = d.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    write_compressed(&bad, "r.tsv.gz", &format!("{}1\tx\t3\n", text(0..41)));
    let e = read_ratings(&bad.to_string_lossy(), 0, 1, RatingFormat::Auto, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("r.tsv.gz:42") && e.contains("item id 'x'"), "{e}");
    // A UCI corpus, gzipped with its vocabulary beside it.
    let c = d.join("corpus");
    std::fs::create_dir_all(&c).unwrap();
    let (doc, _) = write_compressed(&c, "docword.x.txt.gz", "2\n3\n4\n1 1 2\n1 3 1\n2 2 5\n2 3 1\n");
    write(&c.join("vocab.x.txt"), "a\nb\nc\n");
    let (corpus, _) =
        read_corpus(&doc, Some(&c.join("vocab.x.txt").to_string_lossy()), 0, 1, BadRecords::Fail).unwrap();
    assert_eq!((corpus.docs.len(), corpus.vocab_size), (2, 3));
    assert_eq!(corpus.docs.iter().map(|d| d.words.len()).sum::<usize>(), 9);
    let _ = std::fs::remove_dir_all(&d);
}

/// lda-c (`N id:count ...`) and LibSVM (`label id:count ...`) corpora: one document per line,
/// every document read whole by one worker, and every worker agreeing on the vocabulary size.
#[test]
fn sparse_corpora_hold_one_document_per_line() {
    let d = dir("sparse");
    let ldac = write(&d.join("c.ldac"), "2 0:2 3:1\n1 1:4\n\n3 0:1 1:1 2:1\n");
    let svm = write(&d.join("c.svm"), "+1 1:2 4:1\n-1 2:4\n0 1:1 2:1 3:1");
    let want_ldac = vec![vec![0, 0, 3], vec![0, 1, 2], vec![1, 1, 1, 1]];
    let want_svm = vec![vec![1, 1, 4], vec![1, 2, 3], vec![2, 2, 2, 2]];
    for n in 1..4 {
        for (url, v, want) in [(&ldac, 4, &want_ldac), (&svm, 5, &want_svm)] {
            let mut docs = Vec::new();
            for k in 0..n {
                let (c, _) = read_corpus(url, None, k, n, BadRecords::Fail).unwrap();
                assert_eq!(c.vocab_size, v, "{url}, worker {k} of {n}");
                docs.extend(c.docs.into_iter().map(|d| {
                    let mut w = d.words;
                    w.sort();
                    w
                }));
            }
            docs.sort();
            assert_eq!(&docs, want, "{url} with {n} workers");
        }
    }
    let bad = write(&d.join("bad.ldac"), "2 0:2 3:1\n1 1:x\n");
    let e = read_corpus(&bad, None, 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("bad.ldac:2") && e.contains("count 'x'"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
