//! Markup to visible text. Fingerprinting raw HTML measures the site template, under which
//! every page of a site looks like every other (seed 000), so only extracted text is used.
//!
//! A real HTML5 parser (html5ever, through `scraper`) builds the tree; `<main>` or
//! `<article>` is preferred when present, and `script`, `style`, `nav`, `header`, `footer`,
//! `aside` and other non-content elements are dropped.

use scraper::{ElementRef, Html, Node, Selector};

/// Elements whose content is never text of the page.
const DROPPED: &[&str] = &[
    "script", "style", "nav", "header", "footer", "aside", "noscript", "template", "svg", "iframe",
    "object", "canvas", "form", "button", "select", "head",
];

/// Elements after which a line break separates words.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "td",
    "th",
    "table",
    "section",
    "article",
    "main",
    "blockquote",
    "pre",
    "dd",
    "dt",
    "figcaption",
    "hr",
    "title",
];

/// The visible text of an HTML document or fragment.
///
/// ```
/// let html = "<html><head><title>T</title><script>var x;</script></head><body>\
///   <nav>Home | News</nav><article><h1>Storm</h1><p>The road is <b>closed</b>.</p></article>\
///   <footer>(c) Example</footer></body></html>";
/// assert_eq!(neardup::text::html_to_text(html), "Storm\nThe road is closed.");
/// ```
pub fn html_to_text(html: &str) -> String {
    let doc = Html::parse_document(html);
    let pick = |sel: &str| -> Option<ElementRef<'_>> {
        let s = Selector::parse(sel).expect("static selector");
        doc.select(&s).next()
    };
    let root = pick("main")
        .or_else(|| pick("article"))
        .or_else(|| pick("body"))
        .unwrap_or_else(|| doc.root_element());
    let mut out = String::new();
    walk(root, &mut out);
    // Fold runs of blank space, keeping line breaks between blocks.
    let mut text = String::with_capacity(out.len());
    for line in out.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if !line.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&line);
        }
    }
    text
}

fn walk(element: ElementRef<'_>, out: &mut String) {
    for child in element.children() {
        match child.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(e) => {
                let name = e.name();
                if DROPPED.contains(&name) {
                    continue;
                }
                if let Some(el) = ElementRef::wrap(child) {
                    let block = BLOCKS.contains(&name);
                    if block {
                        out.push('\n');
                    }
                    walk(el, out);
                    if block {
                        out.push('\n');
                    } else {
                        // Inline elements still separate words only where the source did.
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_template_and_prefers_main() {
        let html = r#"<!doctype html><html><body>
            <header><a href="/">Site</a></header>
            <div class="ad">Buy now</div>
            <main><h2>Title</h2><p>First paragraph.</p><p>Second&nbsp;one &amp; more</p>
              <script>alert(1)</script><aside>Related</aside></main>
            <footer>Contact</footer></body></html>"#;
        assert_eq!(
            html_to_text(html),
            "Title\nFirst paragraph.\nSecond one & more"
        );
    }

    #[test]
    fn body_is_used_without_main_or_article_and_fragments_work() {
        assert_eq!(
            html_to_text("<p>Just <i>a</i> fragment</p>"),
            "Just a fragment"
        );
        assert_eq!(html_to_text(""), "");
        assert_eq!(html_to_text("<div>a</div><div>b</div>"), "a\nb");
    }
}
