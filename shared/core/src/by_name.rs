//! JSON and text for the closed sets of names the fleet writes (a status, an approval
//! status, an attempt's outcome, a provider, a reason, …): each is written as its `as_str`
//! name, exactly the text its column holds, so a typed row serialises as the row itself
//! reads (the console, tests and the example agent parse that text) and a log line or a
//! message shows the same name.

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

/// Implements `Deserialize` for `$t` by its `parse`, refusing an unknown name as not
/// `$what`.
macro_rules! deserialize_by_name {
    ($t:ty, $what:literal) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$t, D::Error> {
                let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                <$t>::parse(&name)
                    .ok_or_else(|| serde::de::Error::custom(format!("{name:?} is not {}", $what)))
            }
        }
    };
}

/// Implements `Display` for `$t` by its `as_str` name.
macro_rules! display_by_name {
    ($t:ty) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Implements `FromStr` for `$t` by its `parse`, refusing an unknown name with `$err`.
macro_rules! from_str_by_name {
    ($t:ty, $err:ident) => {
        impl std::str::FromStr for $t {
            type Err = $err;

            fn from_str(s: &str) -> Result<$t, $err> {
                <$t>::parse(s).ok_or_else(|| $err(s.to_owned()))
            }
        }
    };
}

pub(crate) use {deserialize_by_name, display_by_name, from_str_by_name, serialize_by_name};
