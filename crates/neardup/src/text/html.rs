//! Markup to visible text. Fingerprinting raw HTML measures the site template, under which
//! every page of a site looks like every other (seed 000), so only extracted text is used.
//!
//! A real HTML5 tokenizer (html5gum, which follows the WHATWG tokenizer state machine and
//! passes the html5lib tokenizer tests) reads the markup: tags, comments, character
//! references, raw-text elements (`script`, `style`, `textarea`, `title`, …). Extraction
//! needs only a little of what a tree builder does, so it keeps its own stack of open
//! elements instead of building a DOM: `script`, `style`, `nav`, `header`, `footer`, `aside`
//! and other non-content elements are dropped with everything inside them, the document's
//! head is dropped, and the first `<main>` (else `<article>`) is preferred when present.
//!
//! Why not a DOM: html5ever's tree (through `scraper`) read 3,000 pages of the Rust docs at
//! 38-40 MB/s a core, allocating a node per element and text run; this reads them at 190-208
//! MB/s (same runs), with the same text for all but one (a `<summary>` now ends a line).

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Emitter, ForwardingEmitter, Span, Tokenizer};

/// The visible text of an HTML document or fragment.
///
/// Blocks (paragraphs, list items, headings, cells, …) are separated by line breaks, runs of
/// white space within a line fold to one space.
///
/// ```
/// let html = "<html><head><title>T</title><script>var x;</script></head><body>\
///   <nav>Home | News</nav><article><h1>Storm</h1><p>The road is <b>closed</b>.</p></article>\
///   <footer>(c) Example</footer></body></html>";
/// assert_eq!(neardup::text::html_to_text(html), "Storm\nThe road is closed.");
/// ```
pub fn html_to_text(html: &str) -> String {
    let mut extractor = Extractor::default();
    let mut emitter = CallbackEmitter::new(|event: CallbackEvent<'_>, _: Span<()>| {
        extractor.event(event);
        None::<()>
    });
    // Switch to raw text after `<script>`, `<style>`, `<title>`, `<textarea>`, … as a tree
    // builder would tell the tokenizer to.
    emitter.naively_switch_states(true);
    // A byte order mark is no text (browsers drop it before decoding); a page saved with one
    // kept it at the start of its text.
    let html = html.strip_prefix('\u{feff}').unwrap_or(html);
    // Reading a `&str` cannot fail, and the tokenizer yields no tokens of its own here.
    for _ in Tokenizer::new_with_emitter(html, NoParseErrors(emitter)) {}
    extractor.finish()
}

/// Turns off the tokenizer's parse-error reporting, which validated every character of the
/// input (half of the tokenizer's time) for errors nobody reads: extraction, as a browser,
/// reads malformed markup as best it can. Attributes are not collected either (a fifth of
/// what was left).
struct NoParseErrors<E>(E);

impl<E: Emitter> ForwardingEmitter for NoParseErrors<E> {
    type Token = E::Token;

    fn inner(&mut self) -> &mut impl Emitter<Token = Self::Token> {
        &mut self.0
    }

    fn should_emit_errors(&mut self) -> bool {
        false
    }

    // Attributes are never text: they are not collected.
    fn init_attribute(&mut self) {}

    fn push_attribute_name(&mut self, _: &[u8]) {}

    fn push_attribute_value(&mut self, _: &[u8]) {}
}

/// Elements whose open ones are counted: those dropped with everything inside them
/// ([`DROPPED`] of them, first), then `<main>` and `<article>`. An end tag of one is looked
/// for all the way down the stack of open elements (one left open would drop, or prefer,
/// the rest of the page), but only while one is open: a page of stray end tags costs no
/// search each.
///
/// A `<form>` is not dropped: ASP.NET pages wrap the whole page in one; its buttons and
/// selects are.
const TRACKED: [&[u8]; 16] = [
    b"script",
    b"style",
    b"nav",
    b"header",
    b"footer",
    b"aside",
    b"noscript",
    b"template",
    b"svg",
    b"iframe",
    b"object",
    b"canvas",
    b"button",
    b"select",
    b"main",
    b"article",
];
const DROPPED: usize = 14;
const SVG: usize = 8;
const BUTTON: usize = 12;
const SELECT: usize = 13;
const MAIN: usize = 14;
const ARTICLE: usize = 15;

/// The place of `name` in [`TRACKED`].
fn tracked(name: &[u8]) -> Option<usize> {
    TRACKED.iter().position(|&t| t == name)
}

/// Elements with no content and no end tag.
fn is_void(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"br"
            | b"col"
            | b"embed"
            | b"hr"
            | b"img"
            | b"input"
            | b"link"
            | b"meta"
            | b"source"
            | b"track"
            | b"wbr"
            | b"keygen"
            | b"param"
            | b"basefont"
            | b"bgsound"
            | b"frame"
            | b"image"
    )
}

/// Elements that may be in the document's head (or before it): their start tags do not
/// begin the body.
fn in_head(name: &[u8]) -> bool {
    matches!(
        name,
        b"html"
            | b"head"
            | b"title"
            | b"base"
            | b"link"
            | b"meta"
            | b"basefont"
            | b"bgsound"
            | b"script"
            | b"style"
            | b"noscript"
            | b"template"
    )
}

/// `<h1>` to `<h6>`: blocks, and among the elements that end an `<svg>`.
fn is_heading(name: &[u8]) -> bool {
    matches!(name, b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6")
}

/// Elements after which a line break separates words.
fn is_block(name: &[u8]) -> bool {
    is_heading(name)
        || matches!(
            name,
            b"p" | b"div"
                | b"br"
                | b"li"
                | b"ul"
                | b"ol"
                | b"tr"
                | b"td"
                | b"th"
                | b"table"
                | b"section"
                | b"article"
                | b"main"
                | b"blockquote"
                | b"pre"
                | b"dl"
                | b"dd"
                | b"dt"
                | b"figure"
                | b"figcaption"
                | b"caption"
                | b"details"
                | b"summary"
                | b"address"
                | b"fieldset"
                | b"center"
                | b"hr"
                | b"title"
        )
}

/// Elements a start tag of the same name closes when it is the current one (their end tags
/// are optional: `<li>one<li>two`).
fn closes_itself(name: &[u8]) -> bool {
    matches!(
        name,
        b"p" | b"li" | b"dt" | b"dd" | b"tr" | b"td" | b"th" | b"option" | b"a"
    )
}

/// HTML elements whose start tag in an `<svg>` ends it (the tree builder's "breakout" from
/// foreign content).
fn breaks_out_of_svg(name: &[u8]) -> bool {
    is_heading(name)
        || matches!(
            name,
            b"b" | b"big"
                | b"blockquote"
                | b"body"
                | b"br"
                | b"center"
                | b"code"
                | b"dd"
                | b"div"
                | b"dl"
                | b"dt"
                | b"em"
                | b"embed"
                | b"hr"
                | b"i"
                | b"img"
                | b"li"
                | b"listing"
                | b"menu"
                | b"meta"
                | b"nobr"
                | b"ol"
                | b"p"
                | b"pre"
                | b"ruby"
                | b"s"
                | b"small"
                | b"span"
                | b"strong"
                | b"strike"
                | b"sub"
                | b"sup"
                | b"table"
                | b"tt"
                | b"u"
                | b"ul"
                | b"var"
        )
}

/// How far below the current element an end tag of an untracked element looks for its
/// element: a stray end tag is ignored, as a tree builder ignores one with no element in
/// scope, without searching a deep stack of never-closed elements for each.
const END_TAG_REACH: usize = 64;

/// What an open element is to extraction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `<title>`: dropped in the head, text in the body.
    Title,
    /// The first `<main>`, whose text is preferred to the rest of the page.
    FirstMain,
    /// The first `<article>`, whose text is preferred when there is no `<main>`.
    FirstArticle,
    /// Any other element.
    Other,
}

/// An open element.
#[derive(Clone, Copy)]
struct Open {
    /// Its name, as [`name_key`] gives it.
    name: u64,
    kind: Kind,
    /// Its place in [`TRACKED`].
    tracked: Option<u8>,
}

/// What an open element is known by: a name of up to 7 bytes itself (with its length in the
/// top byte), a longer one (custom elements) by its hash, marked in the top byte.
fn name_key(name: &[u8]) -> u64 {
    if name.len() < 8 {
        let mut bytes = [0u8; 8];
        bytes[..name.len()].copy_from_slice(name);
        bytes[7] = name.len() as u8;
        u64::from_le_bytes(bytes)
    } else {
        xxhash_rust::xxh3::xxh3_64(name) | 0xff << 56
    }
}

/// Where the text of an element begins in the page's text, and where it ends once closed.
type Range = Option<(usize, Option<usize>)>;

/// The text of a page, read event by event.
#[derive(Default)]
struct Extractor {
    /// The visible text so far, folded: words of a line separated by one space, lines by one
    /// line break.
    text: String,
    /// A line break is due before the next word.
    newline: bool,
    /// A space is due before the next word.
    space: bool,
    /// The open elements, innermost last.
    open: Vec<Open>,
    /// How many of each [`TRACKED`] element are open.
    counts: [u32; TRACKED.len()],
    /// The body has begun: what came before was the head (whose title is dropped too).
    body: bool,
    /// The start tag being read (its attributes may follow) is an `<svg>`'s.
    svg_started: bool,
    /// The text of the first `<main>` and of the first `<article>`.
    main: Range,
    article: Range,
}

impl Extractor {
    fn event(&mut self, event: CallbackEvent<'_>) {
        match event {
            CallbackEvent::OpenStartTag { name } => self.start(name),
            CallbackEvent::CloseStartTag { self_closing } => {
                // Only an `<svg/>` is closed by its slash (and what is inside one is dropped):
                // HTML elements ignore it, and the tokenizer reads a `<script/>` on as script.
                let svg = std::mem::take(&mut self.svg_started);
                if svg && self_closing {
                    self.close_at(self.open.len() - 1);
                }
            }
            CallbackEvent::EndTag { name } => self.end(name),
            CallbackEvent::String { value } => self.string(value),
            _ => {}
        }
    }

    fn start(&mut self, name: &[u8]) {
        if !self.body && !in_head(name) {
            self.body = true;
        }
        if is_block(name) {
            self.newline = true;
        }
        if self.counts[SVG] > 0 && breaks_out_of_svg(name) {
            // An HTML element in an `<svg>` ends it, as a tree builder reads a page that
            // left its `<svg>` open.
            self.close(SVG);
        }
        if is_void(name) || name == b"head" {
            // A head is not an open element here: one never closed would drop the page.
            return;
        }
        let tracked = tracked(name);
        match tracked {
            // A select in a select ends it.
            Some(SELECT) if self.counts[SELECT] > 0 => return self.close(SELECT),
            // A button in a button ends it and begins anew.
            Some(BUTTON) => self.close(BUTTON),
            _ => {}
        }
        let at = self.text.len();
        let kind = match tracked {
            Some(MAIN) if self.main.is_none() && !self.dropping() => {
                self.main = Some((at, None));
                Kind::FirstMain
            }
            Some(ARTICLE) if self.article.is_none() && !self.dropping() => {
                self.article = Some((at, None));
                Kind::FirstArticle
            }
            _ if name == b"title" => Kind::Title,
            _ => Kind::Other,
        };
        let key = name_key(name);
        if closes_itself(name) && self.open.last().is_some_and(|o| o.name == key) {
            self.close_at(self.open.len() - 1);
        }
        if let Some(i) = tracked {
            self.counts[i] += 1;
        }
        self.open.push(Open {
            name: key,
            kind,
            tracked: tracked.map(|i| i as u8),
        });
        self.svg_started = tracked == Some(SVG);
    }

    fn end(&mut self, name: &[u8]) {
        if is_block(name) {
            self.newline = true;
        }
        match tracked(name) {
            Some(i) => self.close(i),
            None if !is_void(name) => self.close_within(name_key(name), END_TAG_REACH),
            None => {}
        }
    }

    /// Closes the innermost open [`TRACKED`] element `i`, if one is open.
    fn close(&mut self, i: usize) {
        if self.counts[i] > 0 {
            self.close_within(name_key(TRACKED[i]), self.open.len());
        }
    }

    /// Closes the innermost element named `key` among the `reach` innermost, if there.
    fn close_within(&mut self, key: u64, reach: usize) {
        let found = self
            .open
            .iter()
            .rev()
            .take(reach)
            .position(|o| o.name == key);
        if let Some(depth) = found {
            self.close_at(self.open.len() - 1 - depth);
        }
    }

    /// Closes the open element at `at` and every element opened inside it.
    fn close_at(&mut self, at: usize) {
        let end = self.text.len();
        for open in self.open.drain(at..) {
            if let Some(i) = open.tracked {
                self.counts[usize::from(i)] -= 1;
            }
            match open.kind {
                Kind::FirstMain => close_range(&mut self.main, end),
                Kind::FirstArticle => close_range(&mut self.article, end),
                Kind::Title | Kind::Other => {}
            }
        }
    }

    /// Whether a dropped element is open: what is read now is not text of the page.
    fn dropping(&self) -> bool {
        self.counts[..DROPPED].iter().any(|&n| n > 0)
    }

    fn string(&mut self, value: &[u8]) {
        if self.dropping() {
            return;
        }
        if !self.body {
            // Text outside the head's title (dropped with the head) begins the body, as a
            // tree builder's "in head" and "after head" modes have it.
            let in_title = self.open.last().is_some_and(|o| o.kind == Kind::Title);
            if in_title || value.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            self.body = true;
        }
        // The tokenizer reads a `&str`: what it gives back is UTF-8 (a character reference
        // decodes to whole characters), checked here by std's ASCII-fast validation.
        match std::str::from_utf8(value) {
            Ok(text) => self.push(text),
            Err(_) => self.push(&String::from_utf8_lossy(value)),
        }
    }

    /// Appends `s`, folding white space: a line break in `s` or between blocks separates
    /// lines, other white space separates words; neither begins or ends the text.
    fn push(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut at = 0;
        while let Some(&b) = bytes.get(at) {
            let len = match b {
                b'\n' => {
                    self.newline = true;
                    1
                }
                // ASCII white space as `char::is_whitespace` has it.
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                    self.space = true;
                    1
                }
                // A run of other ASCII, the most of most pages' text.
                0..0x80 => {
                    let run = bytes[at..]
                        .iter()
                        .position(|&b| b >= 0x80 || b == b' ' || (0x09..=0x0d).contains(&b))
                        .unwrap_or(bytes.len() - at);
                    self.separate();
                    self.text.push_str(&s[at..at + run]);
                    run
                }
                _ => {
                    let c = s[at..].chars().next().unwrap_or_default();
                    if c.is_whitespace() {
                        self.space = true;
                    } else {
                        self.separate();
                        self.text.push(c);
                    }
                    c.len_utf8()
                }
            };
            at += len;
        }
    }

    /// Writes the separator due before a word.
    fn separate(&mut self) {
        if !self.text.is_empty() {
            if self.newline {
                self.text.push('\n');
            } else if self.space {
                self.text.push(' ');
            }
        }
        self.newline = false;
        self.space = false;
    }

    /// The text of the first `<main>`, else of the first `<article>`, else of the page.
    fn finish(mut self) -> String {
        let Some((start, stop)) = self.main.or(self.article) else {
            return self.text;
        };
        let stop = stop.unwrap_or(self.text.len());
        self.text.truncate(stop);
        // The separator before the element's first word is not its text.
        let skip =
            self.text[start..].len() - self.text[start..].trim_start_matches(['\n', ' ']).len();
        self.text.drain(..start + skip);
        self.text
    }
}

/// Ends an open range of the text at `at`.
fn close_range(range: &mut Range, at: usize) {
    if let Some((_, end @ None)) = range {
        *end = Some(at);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_byte_order_mark_is_not_text() {
        assert_eq!(
            super::html_to_text("\u{feff}<p>Hello</p>"),
            super::html_to_text("<p>Hello</p>")
        );
        assert!(!super::html_to_text("\u{feff}plain").contains('\u{feff}'));
    }

    use super::*;
    use proptest::prelude::*;

    /// Each page's text is the one expected.
    fn check(cases: &[(&str, &str)]) {
        for (page, expected) in cases {
            assert_eq!(html_to_text(page), *expected, "{page}");
        }
    }

    #[test]
    fn tracked_elements_are_where_their_constants_say() {
        for (at, name) in TRACKED.iter().enumerate() {
            assert_eq!(tracked(name), Some(at), "{}", String::from_utf8_lossy(name));
        }
        assert_eq!(tracked(b"div"), None);
        let named: [(usize, &[u8]); 5] = [
            (SVG, b"svg"),
            (BUTTON, b"button"),
            (SELECT, b"select"),
            (MAIN, b"main"),
            (ARTICLE, b"article"),
        ];
        for (at, name) in named {
            assert_eq!(TRACKED[at], name);
        }
        // The dropped elements come first.
        assert_eq!(DROPPED, MAIN);
    }

    #[test]
    fn drops_template_and_prefers_main() {
        let html = r#"<!doctype html><html><body>
            <header><a href="/">Site</a></header>
            <div class="ad">Buy now</div>
            <main><h2>Title</h2><p>First paragraph.</p><p>Second&nbsp;one &amp; more</p>
              <script>alert(1)</script><aside>Related</aside></main>
            <footer>Contact</footer></body></html>"#;
        check(&[(html, "Title\nFirst paragraph.\nSecond one & more")]);
    }

    #[test]
    fn body_is_used_without_main_or_article_and_fragments_work() {
        check(&[
            ("<p>Just <i>a</i> fragment</p>", "Just a fragment"),
            ("", ""),
            ("<div>a</div><div>b</div>", "a\nb"),
            ("a<br>b<hr>c", "a\nb\nc"),
            ("<p>中文<p>日本語", "中文\n日本語"),
            ("<NAV>menu</Nav><P>Text<BR/>more", "Text\nmore"),
        ]);
    }

    #[test]
    fn the_head_and_its_title_are_dropped_however_the_page_is_written() {
        check(&[
            (
                "<html><head><title>T</title><meta charset=utf-8></head><body>Body</body></html>",
                "Body",
            ),
            // No end of head, no body tag; no head tag at all.
            ("<html><head><title>T</title><p>Body</p>", "Body"),
            ("<title>T</title><link rel=x>Body", "Body"),
            // Text in the head begins the body; a title in the body is text.
            ("<head>Loose<title>T</title></head>", "Loose\nT"),
            ("<body><title>T</title>x", "T\nx"),
        ]);
    }

    #[test]
    fn markup_inside_raw_text_and_comments_is_not_read_as_tags() {
        check(&[
            ("<script>var s = '<nav>'; </div></script>kept", "kept"),
            ("<style>p{x:1}</style>kept", "kept"),
            ("<!-- <nav> -->shown", "shown"),
            ("<textarea><b>raw</b></textarea>x", "<b>raw</b>x"),
            // A `<script/>` is not closed by its slash (the tokenizer reads on as script).
            ("a<script/>var x;</script>b", "ab"),
        ]);
    }

    #[test]
    fn character_references_are_decoded_and_white_space_folds() {
        check(&[
            (
                "&amp; &lt;b&gt; &#x41;&#66; &copy;&nbsp;x\t\u{3000}y",
                "& <b> AB © x y",
            ),
            ("<p>\n  one\n\n two  </p>", "one\ntwo"),
        ]);
    }

    #[test]
    fn a_dropped_element_left_open_ends_with_its_parent() {
        check(&[
            ("<div><nav>menu<ul><li>a</div><p>content</p>", "content"),
            // A stray end tag changes nothing.
            ("a</nav>b</article>c</span>d", "ab\ncd"),
            // An `<svg/>` is closed by its slash; an `<svg>` left open ends at an HTML element.
            ("<svg/>text", "text"),
            ("<svg><path d='M0'/><text>label</text><p>text", "text"),
        ]);
    }

    #[test]
    fn implied_ends_and_nested_buttons_and_selects() {
        check(&[
            ("<ul><li>one<li>two</ul>after", "one\ntwo\nafter"),
            ("<table><tr><td>a<td>b<tr><td>c</table>", "a\nb\nc"),
            ("<button>b1<button>b2</button>after", "after"),
            ("<select><option>o<select>after", "after"),
            // A form's text is the page's (some sites wrap the whole page in one), not its
            // controls'.
            (
                "<form id=aspnetForm><p>Story<button>Go</button><select><option>x</select>",
                "Story",
            ),
        ]);
    }

    #[test]
    fn the_first_main_then_the_first_article_is_the_text() {
        check(&[
            ("<main>m1</main><main>m2</main>x", "m1"),
            ("<article>A<nav>n</nav>B</article><main><p>M</main>x", "M"),
            ("x<article><p>A1</article><article>A2</article>", "A1"),
            // A main in dropped markup is not the page's.
            ("<nav><main>menu</main></nav>outside", "outside"),
            // One never closed runs to the end.
            ("x<main><p>a<p>b", "a\nb"),
        ]);
    }

    #[test]
    fn deep_and_broken_markup_is_read_in_one_pass() {
        // Tens of thousands of elements never closed, then as many stray end tags: each
        // end tag looks a bounded way down (a quadratic search would not finish here).
        let n = 50_000;
        let page = format!(
            "<nav>{}</nav>kept{}{}end",
            "<span>x".repeat(n),
            "<b>".repeat(n),
            "</em></aside>".repeat(n)
        );
        assert_eq!(html_to_text(&page), "keptend");
    }

    /// `text` folded as extraction folds it.
    fn folded(text: &str) -> String {
        text.split('\n')
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn escaped(text: &str) -> String {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    }

    proptest! {
        /// Any text, escaped into a paragraph, comes back as itself, white space folded.
        #[test]
        fn escaped_text_comes_back_folded(text in "[a-z<>&;#\u{e9}\u{4e2d}\u{a0} \t\n\r]{0,80}") {
            // The tokenizer reads a lone CR as a line break, as browsers do.
            let expected = folded(&text.replace("\r\n", "\n").replace('\r', "\n"));
            prop_assert_eq!(html_to_text(&format!("<p>{}</p>", escaped(&text))), expected);
        }
    }
}
