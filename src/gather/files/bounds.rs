//! The bounds of what `kopf-audit lint` reads. lint runs in CI on pull requests from
//! strangers, so a file may be built to exhaust it: a Python expression nested 100,000
//! deep overflows any recursive walk of its syntax tree (and the tree's own drop), a
//! million nested parentheses cost gigabytes in a parser that grows its stack on the
//! heap, and `[[[…]]]` is quadratic in the YAML parser. Each file is measured before
//! it reaches a parser, with a scan that is linear in its length and allocates nothing
//! per byte: a file over a bound is not parsed, and the run names it and the bound.

use ruff_python_ast::token::TokenKind;
use ruff_python_parser::Mode;
use ruff_python_parser::lexer::lex;

/// Largest Python file parsed: 1 MiB. kopf operators' modules are tens of KiB; this is
/// far above a hand-written module and below what costs the parser real memory.
pub(crate) const MAX_PYTHON_BYTES: u64 = 1 << 20;

/// Largest YAML file or rendered chart parsed: 8 MiB (a CRD bundle of a big project is
/// a few MiB).
pub(crate) const MAX_YAML_BYTES: u64 = 8 << 20;

/// Largest Dockerfile, requirements or lock file read: 4 MiB (a lock file with hashes
/// of a few hundred packages is under 1 MiB).
pub(crate) const MAX_OTHER_BYTES: u64 = 4 << 20;

/// Largest file whose content is sniffed for a Dockerfile when its name does not say
/// (`component-operator-dockerfile`, a `Containerfile` under another name): 1 MiB, ten
/// times any hand-written Dockerfile. Only files with no extension or a name holding
/// `dockerfile`/`containerfile` are sniffed at all.
pub(crate) const MAX_SNIFFED_BYTES: u64 = 1 << 20;

/// Most files read in one run; beyond them the rest of the tree is not read (and the run
/// says so). A kopf operator's repository holds hundreds.
pub(crate) const MAX_FILES: usize = 20_000;

/// Most bytes read in one run, all files together: 16 MiB. A kopf operator's own
/// Python, manifests and lock files are a few hundred KiB; lint's cost grows with the
/// objects and handlers read, and at this bound a run stays within seconds and a few
/// hundred MiB (BENCHMARKS.md, "The bounds, measured").
pub(crate) const MAX_TOTAL_BYTES: u64 = 16 << 20;

/// Most kopf handlers read in one run: some source checks compare handlers with each
/// other, so their cost grows with the square of the count. An operator registers tens;
/// a repository past this is generated, not written.
pub(crate) const MAX_HANDLERS: usize = 5_000;

/// Deepest directory walked below the linted root.
pub(crate) const MAX_DIR_DEPTH: usize = 32;

/// Deepest bracket nesting of a Python file: CPython's own tokenizer refuses more than
/// 200 open parentheses (`MAXLEVEL`, "too many nested parentheses"), so no program
/// Python runs is refused here.
pub(crate) const MAX_PYTHON_BRACKETS: usize = 200;

/// Deepest syntax tree a Python file may make, as [`python_depth`] estimates it: the
/// open brackets, the indented blocks, and the operators chained without a comma
/// between them (`a.b.c`, `1+1+1`, `not not x`, `f()()`, `a if b else c if d else e`).
/// A hand-written statement chains tens; 1,000 keeps every recursive walk of the tree
/// (and its drop) within a few MiB of stack.
pub(crate) const MAX_PYTHON_DEPTH: usize = 1_000;

/// Deepest flow nesting (`[`, `{`) of a YAML document; the YAML deserializer itself
/// stops at 128 levels, so nothing it would read is refused here.
pub(crate) const MAX_YAML_FLOW_DEPTH: usize = 128;

/// Widest block indentation of a YAML line, counting the compact `- ` and `? ` markers
/// that open a nested block on the same line (`- - - x`): each block level needs at
/// least one column, so this bounds the block nesting too.
pub(crate) const MAX_YAML_INDENT: usize = 512;

/// Reads `reader` whole when it holds at most `limit` bytes; `None` when it holds more
/// (then `limit + 1` bytes were read and dropped): a file or pipe a stranger wrote is
/// never read past its bound.
pub(crate) fn read_at_most(
    reader: impl std::io::Read,
    limit: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(reader, limit + 1), &mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// A file nested deeper than lint parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooDeep {
    /// What was measured.
    pub(crate) what: &'static str,
    /// The bound it went past.
    pub(crate) limit: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is over lint's bound of {}", self.what, self.limit)
    }
}

/// Checks that a Python file's syntax tree stays within [`MAX_PYTHON_BRACKETS`] and
/// [`MAX_PYTHON_DEPTH`], from its tokens alone (ruff's lexer, linear, no tree built).
pub(crate) fn python_depth(text: &str) -> Result<(), TooDeep> {
    let mut lexer = lex(text, Mode::Module);
    // One chain counter per open bracket, the module level first.
    let mut chains: Vec<usize> = vec![0];
    let mut chained = 0usize;
    let mut indent = 0usize;
    loop {
        let kind = lexer.next_token();
        match kind {
            TokenKind::EndOfFile => return Ok(()),
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                // A call or a subscript nests at the level it is written at.
                bump(&mut chains, &mut chained);
                chains.push(0);
                if chains.len() > MAX_PYTHON_BRACKETS {
                    return Err(TooDeep {
                        what: "the nesting of brackets",
                        limit: MAX_PYTHON_BRACKETS,
                    });
                }
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace if chains.len() > 1 => {
                chained -= chains.pop().unwrap_or(0);
            }
            TokenKind::Comma | TokenKind::Semi | TokenKind::Newline => {
                reset(&mut chains, &mut chained)
            }
            TokenKind::Indent => indent += 1,
            TokenKind::Dedent => indent = indent.saturating_sub(1),
            kind if nests(kind) => bump(&mut chains, &mut chained),
            _ => {}
        }
        if chained + chains.len() + indent > MAX_PYTHON_DEPTH {
            return Err(TooDeep {
                what: "the nesting of expressions and blocks",
                limit: MAX_PYTHON_DEPTH,
            });
        }
    }
}

/// One more nesting operator at the innermost open bracket.
fn bump(chains: &mut [usize], chained: &mut usize) {
    if let Some(last) = chains.last_mut() {
        *last += 1;
        *chained += 1;
    }
}

/// A comma or the end of a statement: the operators before it nest no further.
fn reset(chains: &mut [usize], chained: &mut usize) {
    if let Some(last) = chains.last_mut() {
        *chained -= *last;
        *last = 0;
    }
}

/// Whether a token can make the tree one level deeper: an operator (but the separators
/// and assignments, which make siblings) or a keyword that opens an expression.
fn nests(kind: TokenKind) -> bool {
    let separator = matches!(
        kind,
        TokenKind::Comma | TokenKind::Semi | TokenKind::Colon | TokenKind::Equal
    );
    (kind.is_operator() && !separator)
        || matches!(
            kind,
            TokenKind::If
                | TokenKind::Else
                | TokenKind::Lambda
                | TokenKind::Await
                | TokenKind::Yield
                | TokenKind::For
                | TokenKind::Async
        )
}

/// Checks that a YAML stream stays within [`MAX_YAML_FLOW_DEPTH`] and
/// [`MAX_YAML_INDENT`]: a scan of its lines that skips quoted scalars, comments and the
/// content of block scalars (`|`, `>`), whose brackets are text.
pub(crate) fn yaml_depth(text: &str) -> Result<(), TooDeep> {
    let mut flow = 0usize;
    // The indentation a block scalar's content lines are deeper than, while in one.
    let mut block_scalar: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(parent) = block_scalar {
            if line.trim().is_empty() || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        if line.starts_with("---") || line.starts_with("...") {
            flow = 0;
        }
        if flow == 0 && block_indent(line) > MAX_YAML_INDENT {
            return Err(TooDeep {
                what: "the indentation of a YAML line",
                limit: MAX_YAML_INDENT,
            });
        }
        flow = flow_after(line, flow)?;
        if flow == 0 && opens_block_scalar(line) {
            block_scalar = Some(indent);
        }
    }
    Ok(())
}

/// A line's block indentation: its leading spaces and the compact `- `, `? ` and `: `
/// markers after them.
fn block_indent(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match (bytes[at], bytes.get(at + 1)) {
            (b' ', _) => at += 1,
            (b'-' | b'?' | b':', Some(b' ')) => at += 2,
            _ => break,
        }
    }
    at
}

/// The flow depth after a line, starting at `flow`: brackets outside quotes and comments.
fn flow_after(line: &str, mut flow: usize) -> Result<usize, TooDeep> {
    let mut quote: Option<u8> = None;
    let mut previous = b' ';
    for &byte in line.as_bytes() {
        match (quote, byte) {
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') if matches!(previous, b' ' | b'[' | b'{' | b',' | b':') => {
                quote = Some(byte);
            }
            (None, b'#') if previous == b' ' || previous == b'\t' => break,
            (None, b'[' | b'{') => {
                flow += 1;
                if flow > MAX_YAML_FLOW_DEPTH {
                    return Err(TooDeep {
                        what: "the nesting of YAML flow collections",
                        limit: MAX_YAML_FLOW_DEPTH,
                    });
                }
            }
            (None, b']' | b'}') => flow = flow.saturating_sub(1),
            _ => {}
        }
        previous = byte;
    }
    Ok(flow)
}

/// Whether a line ends in a block scalar's header (`key: |`, `- >-`, `|2+`).
fn opens_block_scalar(line: &str) -> bool {
    let code = line.split(" #").next().unwrap_or(line).trim_end();
    let Some(at) = code.rfind(['|', '>']) else {
        return false;
    };
    let header_ok = code[at + 1..]
        .bytes()
        .all(|b| matches!(b, b'-' | b'+' | b'1'..=b'9'));
    let before = code[..at].trim_end();
    header_ok && (before.is_empty() || before.ends_with(':') || before.ends_with('-'))
}

#[cfg(test)]
mod tests;
