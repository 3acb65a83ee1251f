//! Source code as tokens of its syntax tree (seed 002, section 6.2): parsed with tree-sitter,
//! comments and layout dropped, identifiers and literals reduced to their kind (a variable is
//! `identifier`, a number `integer_literal`), so that shingles of the tokens are n-grams of
//! node kinds that survive renaming, reformatting and re-commenting.
//!
//! The tokens are the tree's nodes in preorder: each named node's kind (its structure: a
//! parent is followed by its children), and the anonymous leaves that carry meaning a kind
//! does not (operators such as `+` or `==`); keywords and brackets are left out, since the
//! node kinds already say them. A text that does not parse (more than a tenth of it under
//! error nodes) has no code tokens: the caller falls back to word tokens.

use std::cell::RefCell;

use tree_sitter::{Language, Node, Parser, TreeCursor};

/// A programming language code mode parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeLang {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`).
    Python,
    /// JavaScript (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// C (`.c`, `.h`).
    C,
    /// C++ (`.cc`, `.cpp`, `.cxx`, `.hpp`, `.hh`, `.hxx`).
    Cpp,
    /// Java (`.java`).
    Java,
    /// Go (`.go`).
    Go,
}

impl CodeLang {
    /// Every language, in the order of [`name`](Self::name)'s list.
    pub const ALL: [CodeLang; 9] = [
        CodeLang::Rust,
        CodeLang::Python,
        CodeLang::JavaScript,
        CodeLang::TypeScript,
        CodeLang::Tsx,
        CodeLang::C,
        CodeLang::Cpp,
        CodeLang::Java,
        CodeLang::Go,
    ];

    /// The language's name, as `--code-lang` takes it.
    pub fn name(self) -> &'static str {
        match self {
            CodeLang::Rust => "rust",
            CodeLang::Python => "python",
            CodeLang::JavaScript => "javascript",
            CodeLang::TypeScript => "typescript",
            CodeLang::Tsx => "tsx",
            CodeLang::C => "c",
            CodeLang::Cpp => "cpp",
            CodeLang::Java => "java",
            CodeLang::Go => "go",
        }
    }

    /// Parses [`name`](Self::name)'s names (and `js`, `ts`, `c++`).
    pub fn parse(name: &str) -> Option<CodeLang> {
        match name {
            "js" => Some(CodeLang::JavaScript),
            "ts" => Some(CodeLang::TypeScript),
            "c++" => Some(CodeLang::Cpp),
            _ => Self::ALL.into_iter().find(|l| l.name() == name),
        }
    }

    /// The language of a file by its extension (`src/main.rs` is Rust), if code mode
    /// parses it.
    ///
    /// ```
    /// use neardup::text::CodeLang;
    /// assert_eq!(CodeLang::from_path("pip/_vendor/rich/text.py"), Some(CodeLang::Python));
    /// assert_eq!(CodeLang::from_path("include/stdio.h"), Some(CodeLang::C));
    /// assert_eq!(CodeLang::from_path("README.md"), None);
    /// ```
    pub fn from_path(path: &str) -> Option<CodeLang> {
        let name = path.rsplit(['/', '\\']).next()?;
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "rs" => CodeLang::Rust,
            "py" | "pyi" => CodeLang::Python,
            "js" | "mjs" | "cjs" | "jsx" => CodeLang::JavaScript,
            "ts" | "mts" | "cts" => CodeLang::TypeScript,
            "tsx" => CodeLang::Tsx,
            "c" | "h" => CodeLang::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" => CodeLang::Cpp,
            "java" => CodeLang::Java,
            "go" => CodeLang::Go,
            _ => return None,
        })
    }

    fn grammar(self) -> Language {
        match self {
            CodeLang::Rust => tree_sitter_rust::LANGUAGE.into(),
            CodeLang::Python => tree_sitter_python::LANGUAGE.into(),
            CodeLang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            CodeLang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            CodeLang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            CodeLang::C => tree_sitter_c::LANGUAGE.into(),
            CodeLang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            CodeLang::Java => tree_sitter_java::LANGUAGE.into(),
            CodeLang::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }
}

/// The share of a text that may lie under error nodes for its tree to count as parsed.
const MAX_ERROR_SHARE: f64 = 0.1;

thread_local! {
    /// One parser per thread and language: a parser is reusable, and making one (with its
    /// language) for every record would cost more than parsing a small file.
    static PARSERS: RefCell<Vec<(CodeLang, Parser)>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with each code token of `source` in order, or returns `false` (calling `f` for
/// none) when `source` does not parse as `lang`.
pub(crate) fn for_each_code_token(source: &str, lang: CodeLang, mut f: impl FnMut(&str)) -> bool {
    let tree = PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let at = match parsers.iter().position(|(l, _)| *l == lang) {
            Some(at) => at,
            None => {
                let mut parser = Parser::new();
                if parser.set_language(&lang.grammar()).is_err() {
                    return None;
                }
                parsers.push((lang, parser));
                parsers.len() - 1
            }
        };
        parsers[at].1.parse(source, None)
    });
    let Some(tree) = tree else {
        return false;
    };
    let root = tree.root_node();
    if root.has_error() && error_bytes(root) as f64 > MAX_ERROR_SHARE * source.len() as f64 {
        return false;
    }
    walk(&mut root.walk(), &mut f);
    true
}

/// The bytes under error nodes (and missing nodes' places) of the tree at `node`.
fn error_bytes(node: Node<'_>) -> usize {
    // A stack rather than recursion, as in `walk`: only subtrees that hold an error are
    // entered.
    let mut stack = vec![node];
    let mut bytes = 0;
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            bytes += node.byte_range().len().max(1);
        } else if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    bytes
}

/// The tokens of the subtree at the cursor, in preorder (iterative: deep trees, such as a
/// long chain of `else if`, must not overflow the stack).
fn walk(cursor: &mut TreeCursor<'_>, f: &mut impl FnMut(&str)) {
    let mut depth = 0usize;
    loop {
        let node = cursor.node();
        let comment = node.is_extra() || node.kind().contains("comment");
        if !comment {
            if let Some(token) = token(node) {
                f(token);
            }
            if cursor.goto_first_child() {
                depth += 1;
                continue;
            }
        }
        // Up until a sibling is found or the root is reached again.
        loop {
            if depth == 0 {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

/// A node's token: a named node's kind; an anonymous leaf's text when it is an operator
/// (no letters or digits, not a bracket or separator); nothing for keywords and brackets.
fn token<'t>(node: Node<'t>) -> Option<&'t str> {
    let kind = node.kind();
    if node.is_named() {
        return Some(kind);
    }
    let operator = !kind.is_empty()
        && !kind.chars().any(char::is_alphanumeric)
        && !matches!(
            kind,
            "(" | ")" | "[" | "]" | "{" | "}" | "," | ";" | "\"" | "'"
        );
    operator.then_some(kind)
}

/// The code tokens of `source`, or `None` when it does not parse as `lang`: for tools and
/// tests (the fingerprint path hashes the tokens without collecting them).
///
/// ```
/// use neardup::text::{code_tokens, CodeLang};
/// let a = code_tokens("fn add(a: u32, b: u32) -> u32 { a + b } // sum", CodeLang::Rust);
/// let b = code_tokens("fn plus(x: u32, y: u32) -> u32 {\n    x + y\n}", CodeLang::Rust);
/// assert_eq!(a, b);
/// assert!(a.unwrap().contains(&"+".to_owned()));
/// ```
pub fn code_tokens(source: &str, lang: CodeLang) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for_each_code_token(source, lang, |t| out.push(t.to_owned())).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(source: &str, lang: CodeLang) -> Vec<String> {
        code_tokens(source, lang).expect("parses")
    }

    #[test]
    fn renaming_reformatting_and_comments_leave_the_tokens() {
        let cases = [
            (
                CodeLang::Python,
                "def total(items):\n    s = 0\n    for x in items:\n        s += x * 2  # double\n    return s\n",
                "# Sum.\ndef acc(values):\n    res = 0\n    for v in values: res += v * 2\n    return res\n",
            ),
            (
                CodeLang::C,
                "int total(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }",
                "/* sum */\nint sum(int *xs, int len)\n{\n  int acc = 0;\n  for (int j = 0; j < len; j++)\n    acc += xs[j];\n  return acc;\n}",
            ),
            (
                CodeLang::Go,
                "package m\nfunc Add(a, b int) int { return a + b }",
                "package m\n// Plus adds.\nfunc Plus(x, y int) int {\n\treturn x + y\n}",
            ),
            (
                CodeLang::Java,
                "class A { int f(int a) { return a * 3; } }",
                "class B {\n  // triple\n  int g(int q) {\n    return q * 3;\n  }\n}",
            ),
            (
                CodeLang::JavaScript,
                "function f(a) { return a.map(x => x + 1); }",
                "// inc\nfunction g(list) {\n  return list.map(item => item + 1)\n}",
            ),
        ];
        for (lang, a, b) in cases {
            assert_eq!(tokens(a, lang), tokens(b, lang), "{lang:?}");
        }
    }

    #[test]
    fn operators_and_structure_are_kept() {
        let plus = tokens("fn f(a: u8, b: u8) -> u8 { a + b }", CodeLang::Rust);
        let minus = tokens("fn f(a: u8, b: u8) -> u8 { a - b }", CodeLang::Rust);
        assert_ne!(plus, minus);
        assert_eq!(plus[0], "source_file");
        assert!(plus.contains(&"binary_expression".to_owned()), "{plus:?}");
        assert!(
            !plus.iter().any(|t| t == "fn" || t == "(" || t == "{"),
            "{plus:?}"
        );
        assert!(!plus.iter().any(|t| t == "a" || t == "f"), "{plus:?}");
    }

    #[test]
    fn every_language_parses_and_prose_does_not() {
        let sources = [
            (
                CodeLang::Rust,
                "fn main() { let x = vec![1, 2]; println!(\"{}\", x.len()); }",
            ),
            (CodeLang::Python, "import os\nprint(os.getcwd())\n"),
            (CodeLang::JavaScript, "const x = [1, 2].map((v) => v * 2);"),
            (
                CodeLang::TypeScript,
                "const x: number[] = [1, 2].map((v: number) => v * 2);",
            ),
            (
                CodeLang::Tsx,
                "const A = () => <div className=\"a\">{1 + 2}</div>;",
            ),
            (
                CodeLang::C,
                "#include <stdio.h>\nint main(void) { printf(\"%d\", 1 << 3); }",
            ),
            (
                CodeLang::Cpp,
                "template <class T> T id(T v) { return v; } int main() { std::vector<int> v; }",
            ),
            (
                CodeLang::Java,
                "public class A { public static void main(String[] a) { System.out.println(1); } }",
            ),
            (
                CodeLang::Go,
                "package main\nimport \"fmt\"\nfunc main() { fmt.Println(1 << 3) }",
            ),
        ];
        for (lang, source) in sources {
            let t = code_tokens(source, lang);
            assert!(t.as_ref().is_some_and(|t| t.len() > 5), "{lang:?}: {t:?}");
        }
        let prose = "The quick brown fox jumps over the lazy dog, and then it runs \
                     away into the forest where nobody can ever find it again.";
        for lang in [CodeLang::Python, CodeLang::Java, CodeLang::Go] {
            assert_eq!(code_tokens(prose, lang), None, "{lang:?}");
        }
    }

    #[test]
    fn a_deep_tree_is_walked_without_recursion() {
        let mut source = String::from("fn f(x: u32) -> u32 {\n");
        for i in 0..5000 {
            source.push_str(&format!("if x == {i} {{ {i} }} else "));
        }
        source.push_str("{ 0 }\n}\n");
        let t = tokens(&source, CodeLang::Rust);
        assert!(t.len() > 5000 * 4, "{}", t.len());
    }

    #[test]
    fn names_extensions_and_parse_agree() {
        for lang in CodeLang::ALL {
            assert_eq!(CodeLang::parse(lang.name()), Some(lang));
        }
        assert_eq!(CodeLang::from_path("a/b.TSX"), Some(CodeLang::Tsx));
        assert_eq!(CodeLang::from_path("Makefile"), None);
        assert_eq!(CodeLang::parse("cobol"), None);
    }
}
