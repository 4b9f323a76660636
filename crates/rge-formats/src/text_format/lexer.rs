//! Tokenizer for protobuf text format, following C++ `io::Tokenizer` as used by
//! `TextFormat::Parser`: identifiers, integers (decimal, `0x` hex, leading-zero
//! octal), floats (with an optional `f` suffix), single- or double-quoted strings
//! with C escapes, one-character symbols, `#` comments.

use super::TextFormatError;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind<'a> {
    Ident(&'a str),
    /// Integer literal text as written (no sign).
    Int(&'a str),
    /// Float literal text as written (no sign), possibly with an `f` suffix.
    Float(&'a str),
    /// A string literal, unescaped.
    Str(Vec<u8>),
    Symbol(char),
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind<'a>,
    pub line: usize,
    pub column: usize,
}

impl Token<'_> {
    /// How the token is named in error messages.
    pub(crate) fn describe(&self) -> String {
        match &self.kind {
            TokenKind::Ident(s) | TokenKind::Int(s) | TokenKind::Float(s) => format!("\"{s}\""),
            TokenKind::Str(_) => "a string".to_owned(),
            TokenKind::Symbol(c) => format!("\"{c}\""),
            TokenKind::Eof => "end of input".to_owned(),
        }
    }
}

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    column: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
            column: 1,
        }
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_char_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error_at(line: usize, column: usize, message: impl Into<String>) -> TextFormatError {
        TextFormatError {
            line,
            column,
            message: message.into(),
        }
    }

    fn error_here(&self, message: impl Into<String>) -> TextFormatError {
        Self::error_at(self.line, self.column, message)
    }

    fn skip_whitespace_and_comments(&mut self) {
        while let Some(c) = self.peek_char() {
            match c {
                ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' => {
                    self.bump();
                }
                '#' => {
                    while let Some(c) = self.peek_char() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                _ => break,
            }
        }
    }

    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, TextFormatError> {
        self.skip_whitespace_and_comments();
        let (line, column) = (self.line, self.column);
        let start = self.pos;
        let Some(c) = self.peek_char() else {
            return Ok(Token {
                kind: TokenKind::Eof,
                line,
                column,
            });
        };
        let kind = if is_ident_start(c) {
            while self.peek_char().is_some_and(is_ident_char) {
                self.bump();
            }
            TokenKind::Ident(&self.src[start..self.pos])
        } else if c.is_ascii_digit()
            || (c == '.' && self.peek_char_at(1).is_some_and(|d| d.is_ascii_digit()))
        {
            self.number(start)?
        } else if c == '"' || c == '\'' {
            TokenKind::Str(self.string(c)?)
        } else if "{}<>[]:;,-/.".contains(c) {
            self.bump();
            TokenKind::Symbol(c)
        } else {
            return Err(self.error_here(format!("unexpected character {c:?}")));
        };
        Ok(Token { kind, line, column })
    }

    fn eat_digits(&mut self, radix: u32) -> usize {
        let mut n = 0;
        while self.peek_char().is_some_and(|c| c.is_digit(radix)) {
            self.bump();
            n += 1;
        }
        n
    }

    fn number(&mut self, start: usize) -> Result<TokenKind<'a>, TextFormatError> {
        let mut is_float = false;
        let first = self.peek_char();
        let second = self.peek_char_at(1);
        if first == Some('0') && matches!(second, Some('x' | 'X')) {
            self.bump();
            self.bump();
            if self.eat_digits(16) == 0 {
                return Err(self.error_here("\"0x\" must be followed by hex digits"));
            }
        } else if first == Some('0') && second.is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
            self.eat_digits(10);
            let text = &self.src[start..self.pos];
            if text.bytes().any(|b| b == b'8' || b == b'9') {
                return Err(
                    self.error_here("numbers starting with a leading zero must be in octal")
                );
            }
        } else {
            self.eat_digits(10);
            if self.peek_char() == Some('.') {
                self.bump();
                self.eat_digits(10);
                is_float = true;
            }
            if matches!(self.peek_char(), Some('e' | 'E')) {
                self.bump();
                if matches!(self.peek_char(), Some('+' | '-')) {
                    self.bump();
                }
                if self.eat_digits(10) == 0 {
                    return Err(self.error_here("\"e\" must be followed by an exponent"));
                }
                is_float = true;
            }
            if matches!(self.peek_char(), Some('f' | 'F')) {
                self.bump();
                is_float = true;
            }
        }
        if self
            .peek_char()
            .is_some_and(|c| is_ident_char(c) || c == '.')
        {
            return Err(self.error_here("need space between number and identifier"));
        }
        let text = &self.src[start..self.pos];
        Ok(if is_float {
            TokenKind::Float(text)
        } else {
            TokenKind::Int(text)
        })
    }

    fn hex_digits(&mut self, max: usize) -> Option<u32> {
        let mut value: u32 = 0;
        let mut n = 0;
        while n < max {
            let Some(d) = self.peek_char().and_then(|c| c.to_digit(16)) else {
                break;
            };
            self.bump();
            value = value * 16 + d;
            n += 1;
        }
        (n > 0).then_some(value)
    }

    /// A `\u`/`\U` escape body: exactly `len` hex digits.
    fn unicode_escape(&mut self, len: usize) -> Result<u32, TextFormatError> {
        let (line, column) = (self.line, self.column);
        let mut value: u32 = 0;
        for _ in 0..len {
            let Some(d) = self.peek_char().and_then(|c| c.to_digit(16)) else {
                return Err(Self::error_at(
                    line,
                    column,
                    "expected hex digits for unicode escape",
                ));
            };
            self.bump();
            value = value.saturating_mul(16).saturating_add(d);
        }
        Ok(value)
    }

    fn string(&mut self, quote: char) -> Result<Vec<u8>, TextFormatError> {
        let (line, column) = (self.line, self.column);
        self.bump();
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek_char() else {
                return Err(Self::error_at(line, column, "unterminated string literal"));
            };
            if c == '\n' {
                return Err(self.error_here("string literals cannot cross line boundaries"));
            }
            if c == quote {
                self.bump();
                return Ok(out);
            }
            if c != '\\' {
                self.bump();
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            let (eline, ecolumn) = (self.line, self.column);
            self.bump();
            let bad = |msg: &str| Self::error_at(eline, ecolumn, msg);
            let Some(e) = self.bump() else {
                return Err(bad("unterminated string literal"));
            };
            match e {
                'a' => out.push(0x07),
                'b' => out.push(0x08),
                'f' => out.push(0x0c),
                'n' => out.push(b'\n'),
                'r' => out.push(b'\r'),
                't' => out.push(b'\t'),
                'v' => out.push(0x0b),
                '\\' | '?' | '\'' | '"' => out.push(e as u8),
                '0'..='7' => {
                    let mut code = e as u32 - '0' as u32;
                    for _ in 0..2 {
                        match self.peek_char().and_then(|c| c.to_digit(8)) {
                            Some(d) => {
                                self.bump();
                                code = code * 8 + d;
                            }
                            None => break,
                        }
                    }
                    let byte = u8::try_from(code).map_err(|_| bad("octal escape out of range"))?;
                    out.push(byte);
                }
                'x' | 'X' => {
                    let code = self
                        .hex_digits(2)
                        .ok_or_else(|| bad("expected hex digits for escape sequence"))?;
                    out.push(u8::try_from(code).map_err(|_| bad("hex escape out of range"))?);
                }
                'u' | 'U' => {
                    let mut code = self.unicode_escape(if e == 'u' { 4 } else { 8 })?;
                    if (0xD800..0xDC00).contains(&code)
                        && self.peek_char() == Some('\\')
                        && self.peek_char_at(1) == Some('u')
                    {
                        // A UTF-16 surrogate pair written as two \u escapes.
                        self.bump();
                        self.bump();
                        let low = self.unicode_escape(4)?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(bad("invalid unicode surrogate pair"));
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    }
                    let ch = char::from_u32(code).ok_or_else(|| bad("invalid unicode escape"))?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => return Err(bad("invalid escape sequence in string literal")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Result<Vec<TokenKind<'_>>, TextFormatError> {
        let mut lx = Lexer::new(src);
        let mut v = Vec::new();
        loop {
            let t = lx.next_token()?;
            if t.kind == TokenKind::Eof {
                return Ok(v);
            }
            v.push(t.kind);
        }
    }

    #[test]
    fn tokens() {
        let k = kinds("a_1: -1.5e3f # c\n 0x1F 017 .5 'x\\101\\x41\\u00e9' {").unwrap();
        assert_eq!(
            k,
            vec![
                TokenKind::Ident("a_1"),
                TokenKind::Symbol(':'),
                TokenKind::Symbol('-'),
                TokenKind::Float("1.5e3f"),
                TokenKind::Int("0x1F"),
                TokenKind::Int("017"),
                TokenKind::Float(".5"),
                TokenKind::Str(b"xAA\xc3\xa9".to_vec()),
                TokenKind::Symbol('{'),
            ]
        );
    }

    #[test]
    fn errors() {
        for bad in [
            "\"abc",
            "\"a\nb\"",
            "\"\\q\"",
            "\"\\777\"",
            "0x",
            "09",
            "1e",
            "12abc",
            "\"\\x\"",
            "@",
        ] {
            assert!(kinds(bad).is_err(), "{bad:?}");
        }
    }
}
