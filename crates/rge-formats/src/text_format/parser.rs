//! The text-format parser: accepts what the printer writes plus the usual
//! leniency of C++ `TextFormat::Parser` (fields in any order, optional `:`
//! before messages, `{}` or `<>`, `[a, b]` lists, `;`/`,` after fields, `#`
//! comments, single quotes, escapes, enums by name or number, hex/octal
//! integers, `inf`/`nan`, `t`/`f`/`True`/`False`).
//!
//! Never panics: all conversions are checked, and message nesting is limited to
//! [`MAX_DEPTH`].

use std::collections::BTreeMap;

use bytes::Bytes;

use super::lexer::{Lexer, Token, TokenKind};
use super::messages::{ProtoEnum, TextMessage};
use super::{TextFormatError, MAX_DEPTH};

type Result<T> = std::result::Result<T, TextFormatError>;

/// What kind of field `TextMessage::merge_field` matched, for duplicate checks.
pub(crate) enum FieldMatch {
    /// No field of that name.
    Unknown,
    /// A non-repeated field outside any oneof: may appear once.
    Singular,
    /// A member of the named oneof: one member of a oneof may appear, once.
    Oneof(&'static str),
    /// A repeated or map field.
    Repeated,
}

pub(crate) struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token<'a>>,
    depth: usize,
}

fn error(token: &Token<'_>, message: impl Into<String>) -> TextFormatError {
    TextFormatError {
        line: token.line,
        column: token.column,
        message: message.into(),
    }
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Parser {
            lexer: Lexer::new(text),
            peeked: None,
            depth: 0,
        }
    }

    fn peek(&mut self) -> Result<&Token<'a>> {
        let token = match self.peeked.take() {
            Some(t) => t,
            None => self.lexer.next_token()?,
        };
        Ok(self.peeked.insert(token))
    }

    fn next(&mut self) -> Result<Token<'a>> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.next_token(),
        }
    }

    fn peek_is_symbol(&mut self, c: char) -> Result<bool> {
        Ok(self.peek()?.kind == TokenKind::Symbol(c))
    }

    /// Consumes the symbol `c` if it is next.
    fn try_symbol(&mut self, c: char) -> Result<bool> {
        let found = self.peek_is_symbol(c)?;
        if found {
            self.next()?;
        }
        Ok(found)
    }

    fn expect_symbol(&mut self, c: char) -> Result<()> {
        let t = self.next()?;
        if t.kind == TokenKind::Symbol(c) {
            Ok(())
        } else {
            Err(error(
                &t,
                format!("expected \"{c}\", found {}", t.describe()),
            ))
        }
    }

    /// Parses a whole message; the input must hold nothing else.
    pub(crate) fn parse_top_level<M: TextMessage>(&mut self) -> Result<M> {
        let mut message = M::default();
        self.parse_fields(&mut message, None)?;
        Ok(message)
    }

    /// Parses fields into `message` up to the closing symbol `close` (or the
    /// end of input for the top level).
    fn parse_fields<M: TextMessage>(&mut self, message: &mut M, close: Option<char>) -> Result<()> {
        let mut seen: Vec<&'a str> = Vec::new();
        let mut seen_oneofs: Vec<(&'static str, &'a str)> = Vec::new();
        loop {
            let token = self.next()?;
            let name = match token.kind {
                TokenKind::Eof if close.is_none() => return Ok(()),
                TokenKind::Symbol(c) if Some(c) == close => return Ok(()),
                TokenKind::Ident(name) => name,
                TokenKind::Symbol('[') => {
                    return Err(error(&token, "extension and Any fields are not supported"))
                }
                _ => {
                    let expected = match close {
                        Some(c) => format!("a field name or \"{c}\""),
                        None => "a field name".to_owned(),
                    };
                    return Err(error(
                        &token,
                        format!("expected {expected}, found {}", token.describe()),
                    ));
                }
            };
            match message.merge_field(name, self)? {
                FieldMatch::Unknown => {
                    return Err(error(
                        &token,
                        format!(
                            "message type \"{}\" has no field named \"{name}\"",
                            M::FULL_NAME
                        ),
                    ))
                }
                FieldMatch::Singular => {
                    if seen.contains(&name) {
                        return Err(error(
                            &token,
                            format!("non-repeated field \"{name}\" is specified multiple times"),
                        ));
                    }
                    seen.push(name);
                }
                FieldMatch::Oneof(oneof) => {
                    if let Some((_, other)) = seen_oneofs.iter().find(|(o, _)| *o == oneof) {
                        let msg = if *other == name {
                            format!("non-repeated field \"{name}\" is specified multiple times")
                        } else {
                            format!(
                                "field \"{name}\" is specified along with field \"{other}\", \
                                 another member of oneof \"{oneof}\""
                            )
                        };
                        return Err(error(&token, msg));
                    }
                    seen_oneofs.push((oneof, name));
                }
                FieldMatch::Repeated => {}
            }
            if !self.try_symbol(';')? {
                self.try_symbol(',')?;
            }
        }
    }

    /// The `:` between a field name and its value: required before scalars,
    /// optional before messages.
    fn separator<T: ParseValue>(&mut self) -> Result<()> {
        if T::IS_MESSAGE {
            self.try_symbol(':')?;
            Ok(())
        } else {
            self.expect_symbol(':')
        }
    }

    /// Parses `: value` of a non-repeated field.
    pub(crate) fn value<T: ParseValue>(&mut self) -> Result<T> {
        self.separator::<T>()?;
        if self.peek_is_symbol('[')? {
            let t = self.next()?;
            return Err(error(&t, "list syntax is only allowed for repeated fields"));
        }
        T::parse_value(self)
    }

    /// A non-repeated scalar field outside a oneof.
    pub(crate) fn scalar<T: ParseValue>(&mut self, slot: &mut T) -> Result<FieldMatch> {
        *slot = self.value()?;
        Ok(FieldMatch::Singular)
    }

    /// A non-repeated message field.
    pub(crate) fn message<M: TextMessage>(&mut self, slot: &mut Option<M>) -> Result<FieldMatch> {
        *slot = Some(self.value()?);
        Ok(FieldMatch::Singular)
    }

    /// A proto3 enum field stored as `i32`.
    pub(crate) fn enumeration<E: ProtoEnum>(&mut self, slot: &mut i32) -> Result<FieldMatch> {
        *slot = self.value::<EnumValue<E>>()?.0;
        Ok(FieldMatch::Singular)
    }

    /// One occurrence of a repeated field: a single value or a `[a, b]` list.
    pub(crate) fn repeated<T: ParseValue>(&mut self, values: &mut Vec<T>) -> Result<FieldMatch> {
        self.separator::<T>()?;
        if self.try_symbol('[')? {
            if !self.try_symbol(']')? {
                loop {
                    values.push(T::parse_value(self)?);
                    if self.try_symbol(']')? {
                        break;
                    }
                    self.expect_symbol(',')?;
                }
            }
        } else {
            values.push(T::parse_value(self)?);
        }
        Ok(FieldMatch::Repeated)
    }

    /// One occurrence of a repeated message field.
    pub(crate) fn messages<M: TextMessage>(&mut self, values: &mut Vec<M>) -> Result<FieldMatch> {
        self.repeated(values)
    }

    /// One occurrence of a map field; a later entry replaces an earlier one
    /// with the same key.
    pub(crate) fn map<K, V>(&mut self, map: &mut BTreeMap<K, V>) -> Result<FieldMatch>
    where
        K: ParseValue + Ord + Default,
        V: ParseValue + Default,
    {
        let mut entries: Vec<MapEntry<K, V>> = Vec::new();
        self.repeated(&mut entries)?;
        for e in entries {
            map.insert(e.key, e.value);
        }
        Ok(FieldMatch::Repeated)
    }

    /// `{ ... }` or `< ... >` around the fields of a nested message.
    fn nested<R>(&mut self, body: impl FnOnce(&mut Self, char) -> Result<R>) -> Result<R> {
        let open = self.next()?;
        let close = match open.kind {
            TokenKind::Symbol('{') => '}',
            TokenKind::Symbol('<') => '>',
            _ => {
                return Err(error(
                    &open,
                    format!("expected \"{{\", found {}", open.describe()),
                ))
            }
        };
        if self.depth >= MAX_DEPTH {
            return Err(error(
                &open,
                format!("message nesting is deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let r = body(self, close);
        self.depth -= 1;
        r
    }

    fn minus(&mut self) -> Result<bool> {
        self.try_symbol('-')
    }
}

/// A value after `name:` (or the body of a message field).
pub(crate) trait ParseValue: Sized {
    const IS_MESSAGE: bool;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self>;
}

impl<M: TextMessage> ParseValue for M {
    const IS_MESSAGE: bool = true;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        p.nested(|p, close| {
            let mut m = M::default();
            p.parse_fields(&mut m, Some(close))?;
            Ok(m)
        })
    }
}

struct MapEntry<K, V> {
    key: K,
    value: V,
}

impl<K: ParseValue + Default, V: ParseValue + Default> ParseValue for MapEntry<K, V> {
    const IS_MESSAGE: bool = true;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        p.nested(|p, close| {
            let mut entry = MapEntry {
                key: K::default(),
                value: V::default(),
            };
            let (mut has_key, mut has_value) = (false, false);
            loop {
                let t = p.next()?;
                let (seen, name) = match t.kind {
                    TokenKind::Symbol(c) if c == close => return Ok(entry),
                    TokenKind::Ident("key") => (&mut has_key, "key"),
                    TokenKind::Ident("value") => (&mut has_value, "value"),
                    TokenKind::Ident(other) => {
                        return Err(error(
                            &t,
                            format!("map entry has no field named \"{other}\""),
                        ))
                    }
                    _ => {
                        let msg = format!(
                            "expected \"key\", \"value\" or \"{close}\", found {}",
                            t.describe()
                        );
                        return Err(error(&t, msg));
                    }
                };
                if *seen {
                    return Err(error(
                        &t,
                        format!("non-repeated field \"{name}\" is specified multiple times"),
                    ));
                }
                *seen = true;
                if name == "key" {
                    entry.key = p.value()?;
                } else {
                    entry.value = p.value()?;
                }
                if !p.try_symbol(';')? {
                    p.try_symbol(',')?;
                }
            }
        })
    }
}

/// Parses the text of an integer token (decimal, 0x hex or leading-0 octal)
/// as a magnitude.
fn int_magnitude(text: &str) -> Option<u64> {
    let (digits, radix) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (hex, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    u64::from_str_radix(digits, radix).ok()
}

/// Parses an optionally negative integer into `i128` (wide enough for every
/// 64-bit value and its negation).
fn parse_integer(p: &mut Parser<'_>, allow_negative: bool) -> Result<i128> {
    let negative = p.minus()?;
    let t = p.next()?;
    match t.kind {
        TokenKind::Int(text) => {
            if negative && !allow_negative {
                return Err(error(&t, "expected an unsigned integer, found \"-\""));
            }
            let m = int_magnitude(text)
                .ok_or_else(|| error(&t, format!("integer out of range: {text}")))?;
            let v = i128::from(m);
            Ok(if negative { -v } else { v })
        }
        _ => Err(error(
            &t,
            format!("expected an integer, found {}", t.describe()),
        )),
    }
}

macro_rules! parse_int {
    ($($t:ty => $neg:expr),*) => {$(
        impl ParseValue for $t {
            const IS_MESSAGE: bool = false;
            fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
                let start = p.peek()?.clone();
                let v = parse_integer(p, $neg)?;
                <$t>::try_from(v).map_err(|_| {
                    error(&start, format!("integer {v} out of range for {}", stringify!($t)))
                })
            }
        }
    )*};
}
parse_int!(i32 => true, i64 => true, u32 => false, u64 => false);

impl ParseValue for f32 {
    const IS_MESSAGE: bool = false;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        let negative = p.minus()?;
        let t = p.next()?;
        let v: f64 = match t.kind {
            TokenKind::Float(text) => {
                let text = text.trim_end_matches(['f', 'F']);
                text.parse()
                    .map_err(|_| error(&t, format!("invalid float: {text}")))?
            }
            TokenKind::Int(text) => {
                if text.len() > 1 && text.starts_with('0') {
                    return Err(error(
                        &t,
                        format!("expected a decimal number, found \"{text}\""),
                    ));
                }
                // Same as C++: exact up to u64::MAX, otherwise read as a double.
                match text.parse::<u64>() {
                    Ok(u) => u as f64,
                    Err(_) => text
                        .parse()
                        .map_err(|_| error(&t, format!("invalid number: {text}")))?,
                }
            }
            TokenKind::Ident(id)
                if id.eq_ignore_ascii_case("inf") || id.eq_ignore_ascii_case("infinity") =>
            {
                f64::INFINITY
            }
            TokenKind::Ident(id) if id.eq_ignore_ascii_case("nan") => f64::NAN,
            _ => {
                return Err(error(
                    &t,
                    format!("expected a number, found {}", t.describe()),
                ))
            }
        };
        // Rounds to nearest, and to +-inf beyond the f32 range (as C++ does).
        let v = v as f32;
        Ok(if negative { -v } else { v })
    }
}

impl ParseValue for bool {
    const IS_MESSAGE: bool = false;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        let t = p.next()?;
        match t.kind {
            TokenKind::Ident("true" | "True" | "t") => Ok(true),
            TokenKind::Ident("false" | "False" | "f") => Ok(false),
            TokenKind::Int(text) => match int_magnitude(text) {
                Some(0) => Ok(false),
                Some(1) => Ok(true),
                _ => Err(error(&t, format!("integer out of range for bool: {text}"))),
            },
            _ => Err(error(
                &t,
                format!("expected \"true\" or \"false\", found {}", t.describe()),
            )),
        }
    }
}

/// One or more adjacent string literals, concatenated.
fn parse_string_bytes(p: &mut Parser<'_>) -> Result<(Vec<u8>, Token<'static>)> {
    let t = p.next()?;
    let at = Token {
        kind: TokenKind::Eof,
        line: t.line,
        column: t.column,
    };
    let TokenKind::Str(mut bytes) = t.kind else {
        return Err(error(
            &t,
            format!("expected a string, found {}", t.describe()),
        ));
    };
    while matches!(p.peek()?.kind, TokenKind::Str(_)) {
        if let TokenKind::Str(more) = p.next()?.kind {
            bytes.extend_from_slice(&more);
        }
    }
    Ok((bytes, at))
}

impl ParseValue for String {
    const IS_MESSAGE: bool = false;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        let (bytes, at) = parse_string_bytes(p)?;
        String::from_utf8(bytes).map_err(|_| error(&at, "string field contains invalid UTF-8"))
    }
}

impl ParseValue for Bytes {
    const IS_MESSAGE: bool = false;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        Ok(Bytes::from(parse_string_bytes(p)?.0))
    }
}

/// An enum value given by name or number.
pub(crate) struct EnumValue<E>(pub i32, std::marker::PhantomData<E>);

impl<E: ProtoEnum> ParseValue for EnumValue<E> {
    const IS_MESSAGE: bool = false;
    fn parse_value(p: &mut Parser<'_>) -> Result<Self> {
        let t = p.peek()?.clone();
        let v = match t.kind {
            TokenKind::Ident(name) => {
                p.next()?;
                E::from_name(name).ok_or_else(|| {
                    error(
                        &t,
                        format!("unknown value \"{name}\" of enum \"{}\"", E::FULL_NAME),
                    )
                })?
            }
            _ => {
                let v = parse_integer(p, true)?;
                i32::try_from(v).map_err(|_| error(&t, format!("enum value {v} out of range")))?
            }
        };
        Ok(EnumValue(v, std::marker::PhantomData))
    }
}
