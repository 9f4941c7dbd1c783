//! Reading our TOML files (provider files, plan files) so that every error names the file, line,
//! column and field: `plans/x.toml:12:9: field `destination.place`: ...`.

use serde::de::DeserializeOwned;
use toml::de::DeValue;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: field `{field}`: {message}")]
pub struct FileError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub field: String,
    pub message: String,
}

/// The text of a file read as bytes: a file that is not UTF-8 (random bytes, a binary given by
/// mistake) is an error at the line and column of its first invalid byte, like any other error
/// in the file, not a failure to read it.
pub fn text(shown: &str, bytes: Vec<u8>) -> Result<String, FileError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or_default();
        let (line, column) = line_col(valid, at);
        FileError {
            file: shown.to_string(),
            line,
            column,
            field: "(document)".to_string(),
            message: format!("not a TOML text file: the byte at offset {at} is not valid UTF-8"),
        }
    })
}

/// Deserialize `text` (read from `shown`) into `T`; errors carry the line and the field path.
pub fn parse<T: DeserializeOwned>(shown: &str, text: &str) -> Result<T, FileError> {
    let de = toml::Deserializer::parse(text).map_err(|e| from_toml(shown, text, "", &e))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        from_toml(shown, text, &field, e.inner())
    })
}

/// An error found after parsing (a rule across fields): located by its field path.
pub fn invalid(shown: &str, text: &str, field: &str, message: String) -> FileError {
    let (line, column) = locate(text, field);
    FileError {
        file: shown.to_string(),
        line,
        column,
        field: field.to_string(),
        message,
    }
}

fn from_toml(shown: &str, text: &str, field: &str, e: &toml::de::Error) -> FileError {
    let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
    FileError {
        file: shown.to_string(),
        line,
        column,
        field: if field.is_empty() || field == "." {
            "(document)".to_string()
        } else {
            field.to_string()
        },
        message: e.message().trim().to_string(),
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, column)
}

/// The line and column of a field path like `classes[2].storage[0].up_to_gb`; a missing field
/// points at the nearest table that exists.
pub fn locate(text: &str, path: &str) -> (usize, usize) {
    let Ok(table) = toml::de::DeTable::parse(text) else {
        return (1, 1);
    };
    let span = table.span();
    let root = toml::Spanned::new(span.clone(), DeValue::Table(table.into_inner()));
    let mut cur = &root;
    let mut best = span.start;
    for seg in split_path(path) {
        let next = match seg {
            Seg::Key(k) => cur.get_ref().get(k.as_str()),
            Seg::Index(i) => cur.get_ref().get(i),
        };
        match next {
            Some(v) => {
                cur = v;
                best = v.span().start;
            }
            None => break,
        }
    }
    line_col(text, best)
}

enum Seg {
    Key(String),
    Index(usize),
}

fn split_path(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            if i > 0 {
                out.push(Seg::Key(rest[..i].to_string()));
            }
            rest = &rest[i..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let end = stripped.find(']').unwrap_or(stripped.len());
                if let Ok(n) = stripped[..end].parse() {
                    out.push(Seg::Index(n));
                }
                rest = stripped.get(end + 1..).unwrap_or("");
            }
        } else if !rest.is_empty() {
            out.push(Seg::Key(rest.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_utf8_is_located_at_its_first_bad_byte() {
        let e = text("p.toml", b"a = 1\nb = \xff\xfe".to_vec()).unwrap_err();
        assert_eq!((e.line, e.column), (2, 5), "{e}");
        assert!(
            e.to_string()
                .starts_with("p.toml:2:5: field `(document)`: not a TOML text file"),
            "{e}"
        );
        assert_eq!(text("p.toml", b"ok".to_vec()).unwrap(), "ok");
    }

    #[test]
    fn locates_nested_fields() {
        let text = "a = 1\n[[b]]\nx = 1\n[[b]]\nx = 2\ny = 3\n";
        assert_eq!(locate(text, "b[1].y"), (6, 5));
        assert_eq!(
            locate(text, "b[1].missing").0,
            4,
            "a missing field points at its table header"
        );
    }

    #[test]
    fn type_errors_name_line_and_field() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            a: u32,
            b: Vec<B>,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct B {
            x: u32,
        }
        let e = parse::<T>("f.toml", "a = 1\n[[b]]\nx = 1\n[[b]]\nx = \"two\"\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (5, "b[1].x"), "{e}");
        let e = parse::<T>("f.toml", "a = 1\n[[b]]\n").unwrap_err();
        assert!(e.message.contains("missing field `x`"), "{e}");
    }
}
