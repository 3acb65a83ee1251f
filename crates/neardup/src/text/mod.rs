//! Text analysis: normalisation, tokenisation, shingling and boilerplate exclusion.

pub(crate) mod boilerplate;
pub(crate) mod normalize;
pub(crate) mod shingle;
pub(crate) mod tokenize;

pub use boilerplate::{Boilerplate, BoilerplateLearner};
pub use normalize::normalize;
pub use tokenize::{tokens, TokenRule};
