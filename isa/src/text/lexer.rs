//! Splitting a line into top-level tokens.

use super::*;

/// A top-level token with its 1-based column.
#[derive(Debug)]
pub(crate) struct Tok<'a> {
    pub(crate) text: &'a str,
    pub(crate) col: usize,
}

/// Split a line into top-level tokens (whitespace outside brackets and quotes), dropping a
/// trailing `;` comment.
pub(crate) fn tokenize(line: &str) -> Result<Vec<Tok<'_>>, ParseError> {
    let mut toks = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut esc = false;
    let mut start: Option<usize> = None;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let col_of = |byte: usize| line[..byte].chars().count() + 1;
    let mut end_all = line.len();
    for &(i, c) in &chars {
        if in_str {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            ';' if depth == 0 => {
                end_all = i;
                break;
            }
            '"' => {
                in_str = true;
                start.get_or_insert(i);
            }
            '[' | '{' => {
                depth += 1;
                start.get_or_insert(i);
            }
            ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(perr(col_of(i), format!("unbalanced `{c}`")));
                }
            }
            c if c.is_whitespace() && depth == 0 => {
                if let Some(s) = start.take() {
                    toks.push(Tok {
                        text: &line[s..i],
                        col: col_of(s),
                    });
                }
            }
            _ => {
                start.get_or_insert(i);
            }
        }
    }
    if in_str {
        return Err(perr(col_of(line.len()), "unterminated string"));
    }
    if depth != 0 {
        return Err(perr(col_of(line.len()), "unbalanced brackets"));
    }
    if let Some(s) = start {
        let t = line[s..end_all].trim_end();
        if !t.is_empty() {
            toks.push(Tok {
                text: t,
                col: col_of(s),
            });
        }
    }
    Ok(toks)
}
