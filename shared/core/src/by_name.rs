//! JSON for the closed sets of names the rows hold (a status, an approval status, an
//! attempt's outcome, a provider): each is written as its `as_str` name, exactly the text
//! its column holds, so a typed row serialises as the row itself reads
//! (the console, tests and the example agent parse that text).

/// Implements `Serialize` for `$t` by its `as_str` name.
macro_rules! serialize_by_name {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

pub(crate) use serialize_by_name;
