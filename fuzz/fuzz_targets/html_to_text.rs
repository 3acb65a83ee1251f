//! Arbitrary bytes (made UTF-8, as a JSON string field is) reduced to their visible text by
//! the library's HTML extractor: never a panic, and the text is folded as documented: words
//! separated by one space or one line break, no white space at either end.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let html = String::from_utf8_lossy(bytes);
    let text = neardup::text::html_to_text(&html);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_whitespace() {
            let folded = (c == ' ' || c == '\n')
                && i > 0
                && i + 1 < chars.len()
                && !chars[i - 1].is_whitespace()
                && !chars[i + 1].is_whitespace();
            assert!(folded, "white space not folded at char {i}: {text:?}");
        }
    }
});
