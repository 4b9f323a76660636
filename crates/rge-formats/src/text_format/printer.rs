//! The text-format printer: C++ `TextFormat::Printer` with default options.
//!
//! Each message prints its fields in field-number order through the helpers
//! here (see `messages.rs`); this file holds indentation, scalar formatting and
//! the C-style escaping of strings and bytes.

use std::collections::BTreeMap;
use std::fmt::Write;

use bytes::Bytes;

use super::float::format_float;
use super::messages::{ProtoEnum, TextMessage};

/// Accumulates the text of one message tree.
pub(crate) struct Printer {
    out: String,
    indent: usize,
}

impl Printer {
    pub(crate) fn new() -> Self {
        Printer {
            out: String::new(),
            indent: 0,
        }
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }

    fn start_line(&mut self) {
        for _ in 0..self.indent {
            self.out.push(' ');
        }
    }

    fn scalar_line<T: PrintScalar + ?Sized>(&mut self, name: &str, value: &T) {
        self.start_line();
        self.out.push_str(name);
        self.out.push_str(": ");
        value.print_scalar(&mut self.out);
        self.out.push('\n');
    }

    fn message_block<M: TextMessage>(&mut self, name: &str, message: &M) {
        self.start_line();
        self.out.push_str(name);
        self.out.push_str(" {\n");
        self.indent += 2;
        message.print_fields(self);
        self.indent -= 2;
        self.start_line();
        self.out.push_str("}\n");
    }

    /// A proto3 singular scalar: printed unless it has the default value.
    pub(crate) fn scalar<T: PrintScalar + ?Sized>(&mut self, name: &str, value: &T) {
        if !value.is_default() {
            self.scalar_line(name, value);
        }
    }

    /// A scalar with presence (a set oneof member): always printed.
    pub(crate) fn scalar_always<T: PrintScalar + ?Sized>(&mut self, name: &str, value: &T) {
        self.scalar_line(name, value);
    }

    /// A repeated scalar: one line per element.
    pub(crate) fn repeated<T: PrintScalar>(&mut self, name: &str, values: &[T]) {
        for v in values {
            self.scalar_line(name, v);
        }
    }

    /// A proto3 singular enum field (stored as `i32`): printed by value name, or
    /// as a number if the value has no name; not printed when 0.
    pub(crate) fn enumeration<E: ProtoEnum>(&mut self, name: &str, value: &i32) {
        if *value != 0 {
            self.scalar_line(name, &EnumText::<E>(*value, std::marker::PhantomData));
        }
    }

    /// A singular message field: printed when set, even if empty.
    pub(crate) fn message<M: TextMessage>(&mut self, name: &str, message: &Option<M>) {
        if let Some(m) = message {
            self.message_block(name, m);
        }
    }

    /// A message that is known to be set (a set oneof member).
    pub(crate) fn message_always<M: TextMessage>(&mut self, name: &str, message: &M) {
        self.message_block(name, message);
    }

    /// A repeated message field.
    pub(crate) fn messages<M: TextMessage>(&mut self, name: &str, messages: &[M]) {
        for m in messages {
            self.message_block(name, m);
        }
    }

    /// A map field: one `name { key: .. value: .. }` entry per element, in key
    /// order. Key and value are always printed, default or not, as C++ does.
    pub(crate) fn map<K: PrintScalar, V: MapValue>(&mut self, name: &str, map: &BTreeMap<K, V>) {
        for (k, v) in map {
            self.start_line();
            self.out.push_str(name);
            self.out.push_str(" {\n");
            self.indent += 2;
            self.scalar_line("key", k);
            v.print_map_value(self);
            self.indent -= 2;
            self.start_line();
            self.out.push_str("}\n");
        }
    }
}

/// Value type of a map field.
pub(crate) trait MapValue {
    fn print_map_value(&self, p: &mut Printer);
}

impl<M: TextMessage> MapValue for M {
    fn print_map_value(&self, p: &mut Printer) {
        p.message_block("value", self);
    }
}

/// A scalar value as printed after `name: `.
pub(crate) trait PrintScalar {
    /// Whether this is the proto3 default (not printed for singular fields).
    fn is_default(&self) -> bool;
    fn print_scalar(&self, out: &mut String);
}

macro_rules! print_int {
    ($($t:ty),*) => {$(
        impl PrintScalar for $t {
            fn is_default(&self) -> bool {
                *self == 0
            }
            fn print_scalar(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
print_int!(i32, i64, u32, u64);

impl PrintScalar for bool {
    fn is_default(&self) -> bool {
        !*self
    }
    fn print_scalar(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl PrintScalar for f32 {
    fn is_default(&self) -> bool {
        // C++ tests presence of a proto3 float by its bits: -0.0 is printed.
        self.to_bits() == 0
    }
    fn print_scalar(&self, out: &mut String) {
        out.push_str(&format_float(*self));
    }
}

impl PrintScalar for str {
    fn is_default(&self) -> bool {
        self.is_empty()
    }
    fn print_scalar(&self, out: &mut String) {
        print_quoted(self.as_bytes(), out);
    }
}

impl PrintScalar for String {
    fn is_default(&self) -> bool {
        self.is_empty()
    }
    fn print_scalar(&self, out: &mut String) {
        print_quoted(self.as_bytes(), out);
    }
}

impl PrintScalar for Bytes {
    fn is_default(&self) -> bool {
        self.is_empty()
    }
    fn print_scalar(&self, out: &mut String) {
        print_quoted(self, out);
    }
}

impl MapValue for i64 {
    fn print_map_value(&self, p: &mut Printer) {
        p.scalar_line("value", self);
    }
}

struct EnumText<E>(i32, std::marker::PhantomData<E>);

impl<E: ProtoEnum> PrintScalar for EnumText<E> {
    fn is_default(&self) -> bool {
        self.0 == 0
    }
    fn print_scalar(&self, out: &mut String) {
        match E::value_name(self.0) {
            Some(name) => out.push_str(name),
            None => {
                let _ = write!(out, "{}", self.0);
            }
        }
    }
}

/// Writes `"..."` with C++ `CEscape`: `\n \r \t \" \' \\` by name, every other
/// byte outside 0x20..=0x7e (UTF-8 included) as a 3-digit octal escape.
pub(crate) fn print_quoted(bytes: &[u8], out: &mut String) {
    out.push('"');
    for &b in bytes {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                out.push('\\');
                out.push(char::from(b'0' + (b >> 6)));
                out.push(char::from(b'0' + ((b >> 3) & 7)));
                out.push(char::from(b'0' + (b & 7)));
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(b: &[u8]) -> String {
        let mut s = String::new();
        print_quoted(b, &mut s);
        s
    }

    #[test]
    fn c_escape() {
        assert_eq!(quoted(b"a\"b'c\\d\ne\rf\tg"), r#""a\"b\'c\\d\ne\rf\tg""#);
        assert_eq!(
            quoted(&[0x12, 0x00, 0x7f, 0x80, 0xff]),
            r#""\022\000\177\200\377""#
        );
        assert_eq!(quoted("é?".as_bytes()), r#""\303\251?""#);
    }
}
