//! `lua:` filters in an embedded Lua 5.4, with cgit's filter API: the script defines
//! `filter_open(...)`, `filter_write(str)` and `filter_close()` (whose number is the filter's
//! exit status) and writes its output with `html`, `html_txt`, `html_attr`, `html_url_path`,
//! `html_url_arg` and `html_include`. A script is loaded once per thread and reloaded when its
//! file changes (cgit loads it once per request, cgitd's threads live longer); a call is
//! stopped at the time limit, a state that failed is dropped.
//!
//! The few native modules cgit's shipped scripts `require` (luaposix's `posix.unistd` and
//! `posix.sys.stat`, luaossl's `openssl.rand`, `openssl.hmac` and `openssl.digest`) are
//! provided here, as far as those scripts use them; other C modules cannot be loaded. Because
//! the process is resident, `os.exit` fails the call instead of ending the server, and
//! `os.getenv` sees the variables cgit would have set for the filter first.

use super::{FILTER_TIMEOUT, MAX_OUTPUT, Output};
use mlua::{HookTriggers, Lua, UserData, UserDataMethods, Value, VmState};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Instant, SystemTime};

/// Memory one script's state may use.
const MEMORY_LIMIT: usize = 64 << 20;

/// What the current call has: its output, its environment and when it must end.
#[derive(Default)]
struct Call {
    out: Vec<u8>,
    env: Vec<(String, String)>,
    deadline: Option<Instant>,
}

struct Script {
    lua: Lua,
    call: Rc<RefCell<Call>>,
    stamp: Option<(SystemTime, u64)>,
}

thread_local! {
    static SCRIPTS: RefCell<HashMap<PathBuf, Script>> = RefCell::new(HashMap::new());
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Runs the Lua filter `path` once: `filter_open(args...)`, `filter_write(input)` (when there
/// is input), `filter_close()`.
pub fn run(
    path: &Path,
    args: &[&str],
    env: &[(&str, String)],
    input: &[u8],
) -> Result<Output, String> {
    let now_stamp = stamp(path);
    SCRIPTS.with(|scripts| {
        let mut scripts = scripts.borrow_mut();
        if scripts.get(path).is_some_and(|s| s.stamp != now_stamp) {
            scripts.remove(path);
        }
        if !scripts.contains_key(path) {
            let script = load(path, now_stamp)?;
            scripts.insert(path.to_path_buf(), script);
        }
        let script = &scripts[path];
        let result = call(script, args, env, input)
            .map_err(|e| format!("lua filter {}: {e}", path.display()));
        if result.is_err() {
            scripts.remove(path);
        }
        result
    })
}

fn call(
    script: &Script,
    args: &[&str],
    env: &[(&str, String)],
    input: &[u8],
) -> mlua::Result<Output> {
    {
        let mut call = script.call.borrow_mut();
        call.out.clear();
        call.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        call.deadline = Some(Instant::now() + FILTER_TIMEOUT);
    }
    let lua = &script.lua;
    let globals = lua.globals();
    let open: mlua::Function = globals.get("filter_open")?;
    let args: Vec<Value> = args
        .iter()
        .map(|a| lua.create_string(a).map(Value::String))
        .collect::<mlua::Result<_>>()?;
    open.call::<()>(mlua::MultiValue::from_iter(args))?;
    if !input.is_empty() {
        let write: mlua::Function = globals.get("filter_write")?;
        write.call::<()>(lua.create_string(input)?)?;
    }
    let close: mlua::Function = globals.get("filter_close")?;
    let status = match close.call::<Value>(())? {
        Value::Integer(i) => i as i32,
        Value::Number(n) => n as i32,
        Value::String(s) => s
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0),
        _ => 0,
    };
    let mut call = script.call.borrow_mut();
    call.deadline = None;
    Ok(Output {
        out: std::mem::take(&mut call.out),
        status,
    })
}

fn load(path: &Path, stamp: Option<(SystemTime, u64)>) -> Result<Script, String> {
    let code = std::fs::read(path).map_err(|e| format!("lua filter {}: {e}", path.display()))?;
    let lua = Lua::new();
    let call = Rc::new(RefCell::new(Call {
        deadline: Some(Instant::now() + FILTER_TIMEOUT),
        ..Call::default()
    }));
    let setup = || -> mlua::Result<()> {
        install(&lua, &call)?;
        lua.set_memory_limit(MEMORY_LIMIT)?;
        let hook_call = Rc::clone(&call);
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(1000),
            move |_, _| match hook_call.borrow().deadline {
                Some(d) if Instant::now() > d => Err(mlua::Error::runtime("time limit exceeded")),
                _ => Ok(VmState::Continue),
            },
        )?;
        lua.load(&code[..])
            .set_name(format!("@{}", path.display()))
            .exec()
    };
    setup().map_err(|e| format!("lua filter {}: {e}", path.display()))?;
    call.borrow_mut().deadline = None;
    Ok(Script { lua, call, stamp })
}

/// The text of a value as Lua's `tostring` gives strings and numbers; nothing for others.
fn text(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(_) | Value::Number(_) => v.to_string().ok().map(String::into_bytes),
        _ => None,
    }
}

/// How one of cgit's `html*` functions writes its text.
type Writer = fn(&[u8], &mut Vec<u8>);

/// cgit's globals, `os` overrides and the native modules its scripts use.
fn install(lua: &Lua, call: &Rc<RefCell<Call>>) -> mlua::Result<()> {
    let g = lua.globals();
    let writers: [(&str, Writer); 5] = [
        ("html", |s, out| out.extend_from_slice(s)),
        ("html_txt", html_txt),
        ("html_attr", html_attr),
        ("html_url_path", |s, out| url_escape(s, out, false)),
        ("html_url_arg", |s, out| url_escape(s, out, true)),
    ];
    for (name, write) in writers {
        let call = Rc::clone(call);
        let f = lua.create_function(move |_, v: Value| {
            if let Some(bytes) = text(&v) {
                let mut call = call.borrow_mut();
                write(&bytes, &mut call.out);
                if call.out.len() as u64 > MAX_OUTPUT {
                    return Err(mlua::Error::runtime("filter output too large"));
                }
            }
            Ok(())
        })?;
        g.set(name, f)?;
    }
    let include_call = Rc::clone(call);
    g.set(
        "html_include",
        lua.create_function(move |_, v: Value| {
            let Some(name) = text(&v) else {
                return Ok(());
            };
            let name = String::from_utf8_lossy(&name).into_owned();
            match std::fs::read(&name) {
                Ok(data) => {
                    let mut call = include_call.borrow_mut();
                    call.out.extend_from_slice(&data);
                    if call.out.len() as u64 > MAX_OUTPUT {
                        return Err(mlua::Error::runtime("filter output too large"));
                    }
                }
                Err(e) => tracing::warn!("lua filter: failed to include file {name}: {e}"),
            }
            Ok(())
        })?,
    )?;
    g.set(
        "print",
        lua.create_function(|_, args: mlua::Variadic<Value>| {
            let words: Vec<String> = args.iter().filter_map(|v| v.to_string().ok()).collect();
            tracing::info!(target: "cgitd::filter", "lua print: {}", words.join("\t"));
            Ok(())
        })?,
    )?;
    let os: mlua::Table = g.get("os")?;
    os.set(
        "exit",
        lua.create_function(|_, code: Value| -> mlua::Result<()> {
            Err(mlua::Error::runtime(format!(
                "os.exit({}) called",
                code.to_string().unwrap_or_default()
            )))
        })?,
    )?;
    // The server's stdin is not the filter's: reading it would block. Input comes through
    // filter_write.
    let io: mlua::Table = g.get("io")?;
    io.set(
        "read",
        lua.create_function(|_, _: mlua::Variadic<Value>| Ok(Value::Nil))?,
    )?;
    let env_call = Rc::clone(call);
    os.set(
        "getenv",
        lua.create_function(move |_, name: String| {
            let call = env_call.borrow();
            let found = call.env.iter().find(|(k, _)| *k == name).map(|(_, v)| v);
            Ok(found.cloned().or_else(|| std::env::var(&name).ok()))
        })?,
    )?;
    let package: mlua::Table = g.get("package")?;
    // Pure-Lua modules installed by the distribution, too.
    let path: String = package.get("path")?;
    package.set(
        "path",
        format!("{path};/usr/share/lua/5.4/?.lua;/usr/share/lua/5.4/?/init.lua"),
    )?;
    let preload: mlua::Table = package.get("preload")?;
    preload.set("posix.sys.stat", lua.create_function(posix_sys_stat)?)?;
    preload.set("posix.unistd", lua.create_function(posix_unistd)?)?;
    preload.set("openssl.rand", lua.create_function(openssl_rand)?)?;
    preload.set("openssl.hmac", lua.create_function(openssl_hmac)?)?;
    preload.set("openssl.digest", lua.create_function(openssl_digest)?)?;
    Ok(())
}

/// cgit's `html_txt`: `<`, `>` and `&` as entities.
fn html_txt(s: &[u8], out: &mut Vec<u8>) {
    html_escape(s, out, false);
}

/// cgit's `html_attr`: also both quotes.
fn html_attr(s: &[u8], out: &mut Vec<u8>) {
    html_escape(s, out, true);
}

fn html_escape(s: &[u8], out: &mut Vec<u8>, quotes: bool) {
    for &c in s {
        match c {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'\'' if quotes => out.extend_from_slice(b"&#x27;"),
            b'"' if quotes => out.extend_from_slice(b"&quot;"),
            _ => out.push(c),
        }
    }
}

/// cgit's URL escaping: every byte is `%xx` except letters, digits and `!$()*,./:;@-` (and,
/// in a path, `+` and `&`; in an argument a space is `+`).
fn url_escape(s: &[u8], out: &mut Vec<u8>, arg: bool) {
    for &c in s {
        let plain = c.is_ascii_alphanumeric()
            || b"!$()*,./:;@-_~[]".contains(&c)
            || (!arg && (c == b'+' || c == b'&'));
        if arg && c == b' ' {
            out.push(b'+');
        } else if plain {
            out.push(c);
        } else {
            out.extend_from_slice(format!("%{c:02x}").as_bytes());
        }
    }
}

fn posix_sys_stat(lua: &Lua, _: Value) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set(
        "umask",
        lua.create_function(|_, mask: Option<u32>| {
            // SAFETY: umask(2) has no memory effects; it is set back by the caller.
            let old = unsafe { libc::umask(mask.unwrap_or(0o22) as libc::mode_t) };
            Ok(old as u32)
        })?,
    )?;
    Ok(t)
}

/// A luaposix-style result: 0, or nil, the message and the errno.
fn posix_result(lua: &Lua, r: std::io::Result<()>) -> mlua::Result<mlua::MultiValue> {
    match r {
        Ok(()) => Ok(mlua::MultiValue::from_iter([Value::Integer(0)])),
        Err(e) => Ok(mlua::MultiValue::from_iter([
            Value::Nil,
            Value::String(lua.create_string(e.to_string())?),
            Value::Integer(e.raw_os_error().unwrap_or(0).into()),
        ])),
    }
}

fn posix_unistd(lua: &Lua, _: Value) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set(
        "crypt",
        lua.create_function(|lua, (key, salt): (mlua::LuaString, mlua::LuaString)| {
            match crypt(&key.as_bytes(), &salt.as_bytes()) {
                Some(hash) => Ok(Value::String(lua.create_string(hash)?)),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    t.set(
        "link",
        lua.create_function(|lua, (from, to): (String, String)| {
            posix_result(lua, std::fs::hard_link(from, to))
        })?,
    )?;
    t.set(
        "unlink",
        lua.create_function(|lua, path: String| posix_result(lua, std::fs::remove_file(path)))?,
    )?;
    Ok(t)
}

/// crypt(3) from the system's libcrypt (loaded when first used, so every scheme the system
/// knows works: yescrypt, SHA-512, …); `None` where there is none or it refuses.
fn crypt(key: &[u8], salt: &[u8]) -> Option<Vec<u8>> {
    use std::ffi::{CStr, CString, c_char, c_void};
    use std::sync::{Mutex, OnceLock};
    type CryptFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut c_char;
    static CRYPT: OnceLock<Option<usize>> = OnceLock::new();
    // crypt(3) returns a static buffer.
    static LOCK: Mutex<()> = Mutex::new(());
    let f = (*CRYPT.get_or_init(|| {
        for name in [c"libcrypt.so.1", c"libcrypt.so.2", c"libcrypt.so"] {
            // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays loaded.
            unsafe {
                let handle = libc::dlopen(name.as_ptr(), libc::RTLD_NOW);
                if handle.is_null() {
                    continue;
                }
                let sym = libc::dlsym(handle, c"crypt".as_ptr());
                if !sym.is_null() {
                    return Some(sym as usize);
                }
            }
        }
        None
    }))?;
    let (key, salt) = (CString::new(key).ok()?, CString::new(salt).ok()?);
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: `f` is libcrypt's crypt, whose signature this is; the strings are NUL-terminated
    // and its result is copied while the lock is held.
    unsafe {
        let f = std::mem::transmute::<*mut c_void, CryptFn>(f as *mut c_void);
        let r = f(key.as_ptr(), salt.as_ptr());
        if r.is_null() {
            return None;
        }
        let hash = CStr::from_ptr(r).to_bytes().to_vec();
        (!hash.starts_with(b"*")).then_some(hash)
    }
}

fn openssl_rand(lua: &Lua, _: Value) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set(
        "bytes",
        lua.create_function(|lua, n: usize| {
            let mut buf = vec![0u8; n.min(1 << 20)];
            let mut filled = 0;
            while filled < buf.len() {
                // SAFETY: writes at most the remaining length into the buffer.
                let r = unsafe {
                    libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0)
                };
                if r <= 0 {
                    return Err(mlua::Error::runtime("getrandom failed"));
                }
                filled += r as usize;
            }
            lua.create_string(buf)
        })?,
    )?;
    Ok(t)
}

#[derive(Clone, Copy)]
enum Alg {
    Md5,
    Sha256,
    Sha512,
}

impl Alg {
    fn named(name: &str) -> mlua::Result<Alg> {
        match name.to_ascii_lowercase().as_str() {
            "md5" => Ok(Alg::Md5),
            "sha256" => Ok(Alg::Sha256),
            "sha512" => Ok(Alg::Sha512),
            other => Err(mlua::Error::runtime(format!("unsupported digest {other}"))),
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Alg::Md5 => md5::Md5::digest(data).to_vec(),
            Alg::Sha256 => sha2::Sha256::digest(data).to_vec(),
            Alg::Sha512 => sha2::Sha512::digest(data).to_vec(),
        }
    }

    fn block(self) -> usize {
        match self {
            Alg::Md5 | Alg::Sha256 => 64,
            Alg::Sha512 => 128,
        }
    }

    /// HMAC (RFC 2104).
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut k = if key.len() > self.block() {
            self.hash(key)
        } else {
            key.to_vec()
        };
        k.resize(self.block(), 0);
        let mut inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
        inner.extend_from_slice(data);
        let mut outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
        outer.extend_from_slice(&self.hash(&inner));
        self.hash(&outer)
    }
}

/// A luaossl digest or HMAC object: `update(data)` appends, `final([data])` gives the raw MAC.
struct Hasher {
    alg: Alg,
    key: Option<Vec<u8>>,
    data: Vec<u8>,
}

impl UserData for Hasher {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method_mut("update", |_, this, data: mlua::LuaString| {
            this.data.extend_from_slice(&data.as_bytes());
            Ok(())
        });
        methods.add_method_mut("final", |lua, this, data: Option<mlua::LuaString>| {
            if let Some(data) = data {
                this.data.extend_from_slice(&data.as_bytes());
            }
            let mac = match &this.key {
                Some(key) => this.alg.hmac(key, &this.data),
                None => this.alg.hash(&this.data),
            };
            lua.create_string(mac)
        });
    }
}

fn openssl_hmac(lua: &Lua, _: Value) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set(
        "new",
        lua.create_function(|_, (key, alg): (mlua::LuaString, Option<String>)| {
            Ok(Hasher {
                alg: Alg::named(alg.as_deref().unwrap_or("sha256"))?,
                key: Some(key.as_bytes().to_vec()),
                data: Vec::new(),
            })
        })?,
    )?;
    Ok(t)
}

fn openssl_digest(lua: &Lua, _: Value) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set(
        "new",
        lua.create_function(|_, alg: Option<String>| {
            Ok(Hasher {
                alg: Alg::named(alg.as_deref().unwrap_or("sha1"))?,
                key: None,
                data: Vec::new(),
            })
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cgitd-lua-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_filter_api_writes_escaped_output_and_returns_the_status() {
        let path = script(
            "api.lua",
            "function filter_open(a, b) buf = a .. '|' .. b end\n\
             function filter_write(s) buf = buf .. s end\n\
             function filter_close() html(buf) html_txt('<&>') html_attr(\"'\") \
             html_url_arg('a b&c') html_url_path('/x y+z') html(os.getenv('X')) return 7 end\n",
        );
        let out = run(&path, &["a", "b"], &[("X", "env".into())], b"<in>").unwrap();
        assert_eq!(out.status, 7);
        assert_eq!(
            String::from_utf8(out.out).unwrap(),
            "a|b<in>&lt;&amp;&gt;&#x27;a+b%26c/x%20y+zenv"
        );
    }

    #[test]
    fn endless_scripts_and_os_exit_fail_without_harm() {
        let path = script(
            "loop.lua",
            "function filter_open() end\nfunction filter_close() while true do end end\n",
        );
        let started = Instant::now();
        assert!(run(&path, &[], &[], b"").is_err());
        assert!(started.elapsed() < FILTER_TIMEOUT * 2);
        let path = script(
            "exit.lua",
            "function filter_open() os.exit(177) end\nfunction filter_close() return 0 end\n",
        );
        assert!(run(&path, &[], &[], b"").is_err());
        let path = script(
            "read.lua",
            "function filter_open() end\nfunction filter_close() return io.read() == nil and 1 or 0 end\n",
        );
        assert_eq!(run(&path, &[], &[], b"").unwrap().status, 1);
    }

    #[test]
    fn digests_and_macs_match_known_values() {
        assert_eq!(
            hex(&Alg::Md5.hash(b"author@example.com")),
            "5c1e6d6e64e12aca17657581a48005d1"
        );
        // RFC 4231, test case 2.
        assert_eq!(
            hex(&Alg::Sha256.hmac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let hash = crypt(b"secret", b"$6$abcdefgh$").unwrap();
        assert!(hash.starts_with(b"$6$abcdefgh$ltjgWl6579"), "{hash:?}");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }
}
