//! Small macros the crate's modules share (in scope everywhere after `lib.rs` declares this
//! module first, so no module imports them).

/// Builder setters that store their argument in a field of the same name, each with its
/// doc comment:
///
/// ```text
/// setters! {
///     /// Tokens per shingle.
///     shingle_width(shingle_width: usize);
///     /// The tokenisation rule.
///     tokens(tokens: TokenRule) => Some;
/// }
/// ```
///
/// makes `pub fn shingle_width(mut self, shingle_width: usize) -> Self` and a `tokens` that
/// stores `Some(tokens)`. `setters! { &mut; ... }` makes them on `&mut self`, returning
/// `&mut Self`, for builders used in place.
macro_rules! setters {
    (@store $value:ident) => { $value };
    (@store $value:ident, $wrap:path) => { $wrap($value) };
    (&mut; $($(#[$doc:meta])* $name:ident($field:ident: $ty:ty) $(=> $wrap:path)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, $field: $ty) -> &mut Self {
                self.$field = setters!(@store $field $(, $wrap)?);
                self
            }
        )*
    };
    ($($(#[$doc:meta])* $name:ident($field:ident: $ty:ty) $(=> $wrap:path)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $field: $ty) -> Self {
                self.$field = setters!(@store $field $(, $wrap)?);
                self
            }
        )*
    };
}
