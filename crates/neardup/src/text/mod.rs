//! Text analysis: normalisation, tokenisation, shingling and boilerplate exclusion.

pub(crate) mod boilerplate;
pub(crate) mod code;
mod html;
pub(crate) mod language;
pub(crate) mod normalize;
pub(crate) mod shingle;
pub(crate) mod sort;
pub(crate) mod tokenize;

pub use boilerplate::{Boilerplate, BoilerplateLearner, DEFAULT_MIN_COUNT};
pub use code::{code_tokens, CodeLang};
pub use html::html_to_text;
pub use language::{detect_language, is_stopword, Language};
pub use normalize::normalize;
pub use tokenize::{tokens, TokenRule};
