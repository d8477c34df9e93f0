//! Kerberos through the system's GSSAPI library (MIT `libgssapi_krb5.so.2`), loaded at run time
//! so that the binaries run, and start, on hosts without it; only a Kerberos connection needs
//! it. The initiator side only: a security context for a host-based service (`nn@host`,
//! `rm@host`), wrap and unwrap for SASL GSSAPI's final handshake (RFC 4752).

use crate::error::{Result, YarnError};
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::{null, null_mut};

type Major = u32;
type Minor = u32;

#[repr(C)]
struct OidDesc {
    length: u32,
    elements: *const c_void,
}

#[repr(C)]
struct Buffer {
    length: usize,
    value: *mut c_void,
}

impl Buffer {
    fn empty() -> Self {
        Buffer { length: 0, value: null_mut() }
    }
    /// A view of `b` (GSSAPI does not write through input buffers).
    fn of(b: &[u8]) -> Self {
        Buffer { length: b.len(), value: b.as_ptr() as *mut c_void }
    }
}

#[repr(C)]
struct KeyValue {
    key: *const c_char,
    value: *const c_char,
}

#[repr(C)]
struct KeyValueSet {
    count: u32,
    elements: *const KeyValue,
}

type Opaque = *mut c_void;

const COMPLETE: Major = 0;
const CONTINUE_NEEDED: Major = 1;
const MUTUAL: u32 = 2;
const CONF: u32 = 16;
const INTEG: u32 = 32;
const INITIATE: c_int = 1;
/// GSS_C_NT_HOSTBASED_SERVICE (1.2.840.113554.1.2.1.4).
const HOSTBASED: [u8; 10] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x01, 0x04];
/// GSS_KRB5_NT_PRINCIPAL_NAME (1.2.840.113554.1.2.2.1).
const KRB5_PRINCIPAL: [u8; 10] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01];

/// Where the Kerberos credentials come from.
#[derive(Clone, Debug, Default)]
pub enum Login {
    /// The default ticket cache (`KRB5CCNAME`, or the library's default): `kinit`.
    #[default]
    TicketCache,
    /// A principal's keys in a keytab (`--principal`/`--keytab`), into a private memory cache.
    Keytab { principal: String, keytab: String },
}

struct Lib {
    _lib: libloading::Library,
    import_name: unsafe extern "C" fn(*mut Minor, *mut Buffer, *const OidDesc, *mut Opaque) -> Major,
    release_name: unsafe extern "C" fn(*mut Minor, *mut Opaque) -> Major,
    acquire_cred_from: unsafe extern "C" fn(
        *mut Minor,
        Opaque,
        u32,
        *const c_void,
        c_int,
        *const KeyValueSet,
        *mut Opaque,
        *mut Opaque,
        *mut u32,
    ) -> Major,
    release_cred: unsafe extern "C" fn(*mut Minor, *mut Opaque) -> Major,
    #[allow(clippy::type_complexity)]
    init_sec_context: unsafe extern "C" fn(
        *mut Minor,
        Opaque,
        *mut Opaque,
        Opaque,
        *const OidDesc,
        u32,
        u32,
        *const c_void,
        *mut Buffer,
        *mut *const OidDesc,
        *mut Buffer,
        *mut u32,
        *mut u32,
    ) -> Major,
    delete_sec_context: unsafe extern "C" fn(*mut Minor, *mut Opaque, *mut Buffer) -> Major,
    wrap: unsafe extern "C" fn(*mut Minor, Opaque, c_int, u32, *mut Buffer, *mut c_int, *mut Buffer) -> Major,
    unwrap: unsafe extern "C" fn(*mut Minor, Opaque, *mut Buffer, *mut Buffer, *mut c_int, *mut u32) -> Major,
    release_buffer: unsafe extern "C" fn(*mut Minor, *mut Buffer) -> Major,
    display_status: unsafe extern "C" fn(*mut Minor, u32, c_int, *const OidDesc, *mut u32, *mut Buffer) -> Major,
}

macro_rules! sym {
    ($lib:expr, $name:literal) => {
        // SAFETY: the symbol is a function of the GSSAPI C interface (RFC 2744, MIT's
        // gss_acquire_cred_from), declared in `Lib` with that signature; the library stays
        // loaded while `Lib` lives.
        unsafe {
            *$lib.get($name).map_err(|e| {
                YarnError::Config(format!(
                    "{} lacks {}: {e}",
                    LIBRARY,
                    String::from_utf8_lossy(&$name[..$name.len() - 1])
                ))
            })?
        }
    };
}

const LIBRARY: &str = "libgssapi_krb5.so.2";

impl Lib {
    fn load() -> Result<Lib> {
        // SAFETY: loading MIT's GSSAPI library runs its initialisers, which only set up its
        // own state.
        let lib = unsafe { libloading::Library::new(LIBRARY) }.map_err(|e| {
            YarnError::Config(format!(
                "Kerberos needs the system's GSSAPI library ({LIBRARY}; Debian/Ubuntu: libgssapi-krb5-2, \
                 RHEL: krb5-libs): {e}"
            ))
        })?;
        Ok(Lib {
            import_name: sym!(lib, b"gss_import_name\0"),
            release_name: sym!(lib, b"gss_release_name\0"),
            acquire_cred_from: sym!(lib, b"gss_acquire_cred_from\0"),
            release_cred: sym!(lib, b"gss_release_cred\0"),
            init_sec_context: sym!(lib, b"gss_init_sec_context\0"),
            delete_sec_context: sym!(lib, b"gss_delete_sec_context\0"),
            wrap: sym!(lib, b"gss_wrap\0"),
            unwrap: sym!(lib, b"gss_unwrap\0"),
            release_buffer: sym!(lib, b"gss_release_buffer\0"),
            display_status: sym!(lib, b"gss_display_status\0"),
            _lib: lib,
        })
    }

    /// The library's words for a major/minor status pair.
    fn describe(&self, major: Major, minor: Minor) -> String {
        let mut parts = Vec::new();
        for (code, kind) in [(major, 1), (minor, 2)] {
            if code == 0 {
                continue;
            }
            let mut ctx = 0u32;
            for _ in 0..8 {
                let (mut min, mut buf) = (0, Buffer::empty());
                // SAFETY: out-parameters are valid; the buffer is released below.
                let r = unsafe { (self.display_status)(&mut min, code, kind, null(), &mut ctx, &mut buf) };
                if r != COMPLETE {
                    break;
                }
                // SAFETY: on success `buf` holds `length` bytes owned by the library.
                let s = unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length) };
                parts.push(String::from_utf8_lossy(s).into_owned());
                // SAFETY: releasing a buffer the library allocated.
                unsafe { (self.release_buffer)(&mut min, &mut buf) };
                if ctx == 0 {
                    break;
                }
            }
        }
        parts.join(": ")
    }

    fn copy_out(&self, buf: &mut Buffer) -> Vec<u8> {
        if buf.value.is_null() {
            return Vec::new();
        }
        // SAFETY: `buf` was filled by the library with `length` bytes.
        let v = unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length) }.to_vec();
        let mut min = 0;
        // SAFETY: releasing a buffer the library allocated.
        unsafe { (self.release_buffer)(&mut min, buf) };
        v
    }

    fn import(&self, name: &str, oid: &[u8; 10]) -> Result<Opaque> {
        let desc = OidDesc { length: oid.len() as u32, elements: oid.as_ptr() as *const c_void };
        let (mut min, mut out) = (0, null_mut());
        let mut b = Buffer::of(name.as_bytes());
        // SAFETY: valid input buffer and OID; `out` receives a name we release in Drop paths.
        let r = unsafe { (self.import_name)(&mut min, &mut b, &desc, &mut out) };
        if r != COMPLETE {
            return Err(YarnError::Config(format!("Kerberos name {name:?}: {}", self.describe(r, min))));
        }
        Ok(out)
    }
}

/// A client security context with one service, being established or established.
pub struct Context {
    lib: Lib,
    cred: Opaque,
    target: Opaque,
    ctx: Opaque,
    established: bool,
    /// `service@host`, for messages.
    service: String,
}

// SAFETY: the handles are used by one owner at a time (`&mut self`); MIT's GSSAPI is thread-safe
// for distinct contexts.
unsafe impl Send for Context {}

impl Context {
    /// Prepares a context with `service@host` (Hadoop's SASL names it: protocol and server id).
    pub fn new(service: &str, host: &str, login: &Login) -> Result<Context> {
        let lib = Lib::load()?;
        let target = lib.import(&format!("{service}@{host}"), &HOSTBASED)?;
        let mut c = Context {
            lib,
            cred: null_mut(),
            target,
            ctx: null_mut(),
            established: false,
            service: format!("{service}@{host}"),
        };
        if let Login::Keytab { principal, keytab } = login {
            c.cred = c.keytab_cred(principal, keytab)?;
        }
        Ok(c)
    }

    fn keytab_cred(&self, principal: &str, keytab: &str) -> Result<Opaque> {
        let name = self.lib.import(principal, &KRB5_PRINCIPAL)?;
        let cstr = |s: &str| CString::new(s).map_err(|_| YarnError::Config(format!("{s:?} contains a NUL byte")));
        let (k1, v1) = (cstr("client_keytab")?, cstr(keytab)?);
        // A fresh memory cache for this login: it never touches the user's own cache, and never
        // reuses a ticket an earlier login (perhaps with other keys) left behind.
        let cache = format!("MEMORY:ps-yarn-{}-{:016x}", std::process::id(), rand::random::<u64>());
        let (k2, v2) = (cstr("ccache")?, cstr(&cache)?);
        let elems =
            [KeyValue { key: k1.as_ptr(), value: v1.as_ptr() }, KeyValue { key: k2.as_ptr(), value: v2.as_ptr() }];
        let store = KeyValueSet { count: 2, elements: elems.as_ptr() };
        let (mut min, mut cred) = (0, null_mut());
        // SAFETY: every pointer is valid for the call; `cred` is released in Drop.
        let r = unsafe {
            (self.lib.acquire_cred_from)(&mut min, name, 0, null(), INITIATE, &store, &mut cred, null_mut(), null_mut())
        };
        let mut m2 = 0;
        let mut name = name;
        // SAFETY: releasing the name imported above.
        unsafe { (self.lib.release_name)(&mut m2, &mut name) };
        if r != COMPLETE {
            return Err(YarnError::Config(format!(
                "Kerberos login as {principal} from {keytab}: {}",
                self.lib.describe(r, min)
            )));
        }
        Ok(cred)
    }

    /// One step of the context exchange: the server's token in (none at first), ours out.
    pub fn step(&mut self, input: Option<&[u8]>) -> Result<Vec<u8>> {
        let mut inbuf = input.map(Buffer::of);
        let (mut min, mut out, mut flags) = (0, Buffer::empty(), 0u32);
        // SAFETY: handles are ours (or null, as the interface allows); buffers are valid;
        // `out` is released by copy_out.
        let r = unsafe {
            (self.lib.init_sec_context)(
                &mut min,
                self.cred,
                &mut self.ctx,
                self.target,
                null(),
                MUTUAL | CONF | INTEG,
                0,
                null(),
                inbuf.as_mut().map_or(null_mut(), |b| b as *mut Buffer),
                null_mut(),
                &mut out,
                &mut flags,
                null_mut(),
            )
        };
        let token = self.lib.copy_out(&mut out);
        match r {
            COMPLETE => {
                self.established = true;
                Ok(token)
            }
            CONTINUE_NEEDED => Ok(token),
            _ => Err(YarnError::Sasl {
                server: self.service.clone(),
                message: format!("Kerberos: {}{}", self.lib.describe(r, min), hint(&self.lib.describe(r, min))),
            }),
        }
    }

    pub fn established(&self) -> bool {
        self.established
    }

    pub fn wrap(&mut self, plain: &[u8], confidential: bool) -> Result<Vec<u8>> {
        let (mut min, mut out, mut state) = (0, Buffer::empty(), 0);
        let mut inb = Buffer::of(plain);
        // SAFETY: an established context and valid buffers.
        let r =
            unsafe { (self.lib.wrap)(&mut min, self.ctx, confidential as c_int, 0, &mut inb, &mut state, &mut out) };
        let v = self.lib.copy_out(&mut out);
        if r != COMPLETE {
            return Err(YarnError::Sasl { server: self.service.clone(), message: self.lib.describe(r, min) });
        }
        Ok(v)
    }

    pub fn unwrap(&mut self, sealed: &[u8]) -> Result<Vec<u8>> {
        let (mut min, mut out, mut state, mut qop) = (0, Buffer::empty(), 0, 0u32);
        let mut inb = Buffer::of(sealed);
        // SAFETY: an established context and valid buffers.
        let r = unsafe { (self.lib.unwrap)(&mut min, self.ctx, &mut inb, &mut out, &mut state, &mut qop) };
        let v = self.lib.copy_out(&mut out);
        if r != COMPLETE {
            return Err(YarnError::Sasl { server: self.service.clone(), message: self.lib.describe(r, min) });
        }
        Ok(v)
    }
}

/// What to do, in words, about the usual failures.
fn hint(msg: &str) -> &'static str {
    if msg.contains("No Kerberos credentials") || msg.contains("credentials cache") && msg.contains("not found") {
        " (no Kerberos ticket: run `kinit` first, or give --principal and --keytab)"
    } else if msg.contains("expired") {
        " (the Kerberos ticket has expired: run `kinit` again)"
    } else {
        ""
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        let mut min = 0;
        // SAFETY: releasing handles this context owns (null handles are skipped).
        unsafe {
            if !self.ctx.is_null() {
                (self.lib.delete_sec_context)(&mut min, &mut self.ctx, null_mut());
            }
            if !self.cred.is_null() {
                (self.lib.release_cred)(&mut min, &mut self.cred);
            }
            if !self.target.is_null() {
                (self.lib.release_name)(&mut min, &mut self.target);
            }
        }
    }
}
