/**
 * Rust: a tool is src/main.rs plus src/corral.rs (the contract: JSON in,
 * JSON out, errors, cabi_realloc), compiled with rustc alone (no cargo, no
 * crates: crates.io is often out of reach, and the kit needs none) for
 * wasm32-wasip1 (newer rustc) or wasm32-wasi (Debian's 1.63), then wrapped
 * as a wasi:cli command component like the C tools.
 *
 * Why cabi_realloc and not a hand-written _start as in C: a Rust command
 * module keeps wasi-libc's crt1, so wasm-ld wraps the cabi_realloc export in
 * __wasm_call_ctors/__wasm_call_dtors. In a Rust program those are harmless:
 * the constructor only fills in the environment once, the destructors are
 * empty, and Rust's stdout is its own buffer, not C stdio, so nothing is
 * flushed in the middle of a write (checked on a 3 MB input, test/author).
 */
import { access, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingToolchain, writeBuilt, type BuildContext, type Language, type Scaffold } from './language.js';
import { EXAMPLES, readme, toolSpec } from './templates.js';
import { componentizeCommand, runProcess, wasmOpt } from './toolchain.js';

const INSTALL = 'apt-get install rustc libstd-rust-dev-wasm32';

/** The targets that mean WASI preview1, newest name first. */
const TARGETS = ['wasm32-wasip1', 'wasm32-wasi'];

export interface RustToolchain {
  rustc: string;
  target: string;
}

/**
 * The first rustc that has a WASI preview1 standard library: $RUSTC alone
 * when it is set (an explicit choice is never second-guessed), else rustc
 * on PATH, then Debian's /usr/bin/rustc (a rustup rustc first on PATH often
 * lacks the target, and rustup cannot add it offline).
 */
export async function findRustc(env: NodeJS.ProcessEnv = process.env): Promise<RustToolchain> {
  const candidates = env.RUSTC ? [env.RUSTC] : ['rustc', '/usr/bin/rustc'];
  for (const rustc of candidates) {
    for (const target of TARGETS) {
      const r = await runProcess(rustc, ['--print', 'target-libdir', '--target', target], { env });
      if (r.error || r.status !== 0) continue;
      const libdir = r.stdout.trim();
      // The path is printed whether or not the target is installed: look for its std.
      const files = await readdir(libdir).catch(() => [] as string[]);
      if (files.some((f) => f.startsWith('libstd-') && f.endsWith('.rlib'))) return { rustc, target };
    }
  }
  const tried = env.RUSTC ? `RUSTC=${env.RUSTC}` : candidates.join(', ');
  throw new MissingToolchain(
    `No Rust compiler with the WebAssembly WASI standard library was found (tried ${tried}). ` +
      `Install Debian's: ${INSTALL} (or, with rustup online: rustup target add wasm32-wasip1).`,
  );
}

export const rust: Language = {
  name: 'rust',

  scaffold(name: string): Scaffold {
    return {
      'tool-spec.json': toolSpec(name, { memory_mb: 64, timeout_ms: 5000 }),
      'src/main.rs': MAIN_RS,
      'src/corral.rs': CORRAL_RS,
      ...EXAMPLES,
      'README.md': readme(name, 'Rust', 'src/main.rs', 'handle', 'Err(message)'),
      '.gitignore': `${name}.wasm\n`,
    };
  },

  async detect(dir: string): Promise<boolean> {
    return access(join(dir, 'src', 'main.rs')).then(
      () => true,
      () => false,
    );
  },

  async build({ dir, name, out, log }: BuildContext): Promise<void> {
    const { rustc, target } = await findRustc();
    const work = await mkdtemp(join(tmpdir(), 'corral-rust-'));
    try {
      const linked = join(work, 'linked.wasm');
      const module = join(work, 'module.wasm');
      log(`rustc ${rustc === 'rustc' ? '' : `(${rustc}) `}--target ${target} src/main.rs`);
      const crate = name.replace(/[^a-zA-Z0-9_]/g, '_');
      const r = await runProcess(
        rustc,
        [
          '--edition',
          '2021',
          '--crate-name',
          crate,
          '--crate-type',
          'bin',
          '--target',
          target,
          '-C',
          'opt-level=2',
          '-C',
          'strip=symbols',
          join('src', 'main.rs'),
          '-o',
          linked,
        ],
        { cwd: dir },
      );
      if (r.status !== 0) throw new Error(`rustc failed:\n${(r.stderr || r.stdout).trimEnd()}`);
      if (r.stderr.trim()) log(r.stderr.trimEnd());
      log('wasm-opt -O2');
      await wasmOpt(linked, module);
      log('jco new --wasi-command');
      await writeBuilt(dir, out, await componentizeCommand(new Uint8Array(await readFile(module))));
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  },
};

const MAIN_RS = String.raw`//! A Corral tool in Rust.
mod corral;
use corral::Value;

/// One call: input is the JSON object from stdin, already checked against
/// input_schema (tool-spec.json). Return the output, or Err(message).
fn handle(input: &Value) -> Result<Value, String> {
    let text = input.get("text").and_then(Value::as_str).ok_or("input.text must be a string")?;
    let mut words = 0;
    let mut longest = "";
    for word in text.split_whitespace() {
        words += 1;
        if word.chars().count() > longest.chars().count() {
            longest = word;
        }
    }
    Ok(Value::object([("words", Value::from(words as usize)), ("longest", Value::from(longest))]))
}

fn main() {
    corral::run(handle)
}
`;

const CORRAL_RS = String.raw`//! Corral's tool contract for Rust, with no crates: the JSON object on stdin
//! becomes a Value, the Value that handle returns is written to stdout as
//! JSON, and Err(message) becomes {"error":{"message":...}} on stdout, the
//! message on stderr, and exit status 1. Written by corral init; keep it.
#![allow(dead_code)]

use std::io::{Read, Write};

/// A JSON value. Objects keep their keys in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// An object from (key, value) pairs: Value::object([("n", Value::from(1))]).
    pub fn object<K: Into<String>, const N: usize>(entries: [(K, Value); N]) -> Value {
        Value::Object(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
    /// The member KEY of an object (the last one if the key repeats).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
    pub fn is_null(&self) -> bool {
        *self == Value::Null
    }
    /// The value as JSON text, on one line.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_json(self, &mut out);
        out
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Number(n)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(n as f64)
    }
}
impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::Number(n as f64)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}
impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

/// Read the input, call handle, write its answer: the whole life of a call.
pub fn run(handle: fn(&Value) -> Result<Value, String>) {
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        fail(&format!("cannot read stdin: {e}"));
    }
    let input = match parse(&String::from_utf8_lossy(&bytes)) {
        Ok(v) => v,
        Err(e) => fail(&format!("the input is not valid JSON: {e}")),
    };
    match handle(&input) {
        Ok(output) => emit(&output),
        Err(message) => fail(&message),
    }
}

fn emit(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(v.to_json().as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Report an error the way every Corral tool does, and exit 1.
pub fn fail(message: &str) -> ! {
    emit(&Value::object([("error", Value::object([("message", Value::from(message))]))]));
    eprintln!("error: {message}");
    std::process::exit(1)
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // JSON has no NaN or infinity; integers print without a fraction.
        Value::Number(n) if !n.is_finite() => out.push_str("null"),
        Value::Number(n) => out.push_str(&format!("{n}")),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parse JSON text (RFC 8259) into a Value.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser { s: text.as_bytes(), i: 0, depth: 0 };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.error("unexpected text after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
}

impl<'a> Parser<'a> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.i)
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn eat(&mut self, b: u8) -> bool {
        let found = self.s.get(self.i) == Some(&b);
        if found {
            self.i += 1;
        }
        found
    }
    fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.error("unexpected character"))
        }
    }
    fn value(&mut self) -> Result<Value, String> {
        match self.s.get(self.i) {
            None => Err(self.error("unexpected end of input")),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'[' | b'{') => self.nested(),
            Some(_) => self.number(),
        }
    }
    fn nested(&mut self) -> Result<Value, String> {
        self.depth += 1;
        if self.depth > 512 {
            return Err(self.error("nested too deeply"));
        }
        let object = self.s[self.i] == b'{';
        let close = if object { b'}' } else { b']' };
        self.i += 1;
        let (mut items, mut members) = (Vec::new(), Vec::new());
        self.ws();
        if !self.eat(close) {
            loop {
                self.ws();
                if object {
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.error("expected a string key"));
                    }
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b':') {
                        return Err(self.error("expected ':'"));
                    }
                    self.ws();
                    members.push((key, self.value()?));
                } else {
                    items.push(self.value()?);
                }
                self.ws();
                if self.eat(close) {
                    break;
                }
                if !self.eat(b',') {
                    return Err(self.error("expected ',' or a closing bracket"));
                }
            }
        }
        self.depth -= 1;
        Ok(if object { Value::Object(members) } else { Value::Array(items) })
    }
    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        let digits = |p: &mut Parser| {
            let from = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i > from
        };
        self.eat(b'-');
        if !self.eat(b'0') && !digits(self) {
            return Err(self.error("unexpected character"));
        }
        if self.eat(b'.') && !digits(self) {
            return Err(self.error("expected a digit"));
        }
        if self.eat(b'e') || self.eat(b'E') {
            let _ = self.eat(b'+') || self.eat(b'-');
            if !digits(self) {
                return Err(self.error("expected a digit"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        text.parse::<f64>().map(Value::Number).map_err(|_| self.error("bad number"))
    }
    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.s.get(self.i..self.i + 4).ok_or_else(|| self.error("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("bad \\u escape"))?;
        let n = u32::from_str_radix(text, 16).map_err(|_| self.error("bad \\u escape"))?;
        self.i += 4;
        Ok(n)
    }
    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // the opening quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.s.len() && !matches!(self.s[self.i], b'"' | b'\\' | 0..=0x1f) {
                self.i += 1;
            }
            out.push_str(std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.error("bad UTF-8"))?);
            match self.s.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.i += 1,
                Some(_) => return Err(self.error("control character in a string")),
                None => return Err(self.error("unterminated string")),
            }
            let escape = self.s.get(self.i).copied().ok_or_else(|| self.error("unterminated string"))?;
            self.i += 1;
            match escape {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let mut code = self.hex4()?;
                    // A surrogate pair is one character; a lone surrogate becomes U+FFFD.
                    if (0xd800..0xdc00).contains(&code) && self.s[self.i..].starts_with(b"\\u") {
                        let save = self.i;
                        self.i += 2;
                        let low = self.hex4()?;
                        if (0xdc00..0xe000).contains(&low) {
                            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                        } else {
                            self.i = save;
                        }
                    }
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                _ => return Err(self.error("bad escape")),
            }
        }
    }
}

/// The allocator the component adapter uses for its own buffers. Without
/// this export the preview1 -> wasi:cli adapter falls back to a small static
/// arena and traps on inputs or outputs of about 1 MiB and more.
#[no_mangle]
pub unsafe extern "C" fn cabi_realloc(ptr: *mut u8, old_size: usize, align: usize, new_size: usize) -> *mut u8 {
    use std::alloc::{alloc, realloc, Layout};
    if new_size == 0 {
        return align as *mut u8; // a valid, aligned pointer for nothing
    }
    let p = if old_size == 0 {
        alloc(Layout::from_size_align_unchecked(new_size, align))
    } else {
        realloc(ptr, Layout::from_size_align_unchecked(old_size, align), new_size)
    };
    if p.is_null() {
        std::process::abort();
    }
    p
}
`;
