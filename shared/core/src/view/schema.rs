//! The OpenAPI schemas of the names the view holds (with the `openapi` feature, which
//! fleet-api turns on): an enumeration of the very names core writes, so the document
//! lists every status and no other. The component names are the document's own
//! (`StatusName`, `ApprovalStatusName`), kept as clients generated from it know them.

#![cfg(feature = "openapi")]

use std::borrow::Cow;

use utoipa::openapi::schema::{Object, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::{ApprovalStatus, Status};

fn names(description: &str, names: impl IntoIterator<Item = &'static str>) -> RefOr<Schema> {
    let mut schema = Object::with_type(SchemaType::Type(Type::String));
    schema.description = Some(description.to_owned());
    schema.enum_values = Some(names.into_iter().map(Into::into).collect());
    RefOr::T(Schema::Object(schema))
}

/// `$t`'s schema: its names as the component `$component`.
macro_rules! names_schema {
    ($t:ty, $component:literal, $description:literal) => {
        impl PartialSchema for $t {
            fn schema() -> RefOr<Schema> {
                names($description, <$t>::ALL.map(<$t>::as_str))
            }
        }

        impl ToSchema for $t {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($component)
            }
        }
    };
}

names_schema!(
    Status,
    "StatusName",
    "Where an operation stands (the operation state table: docs/design.md)."
);
names_schema!(
    ApprovalStatus,
    "ApprovalStatusName",
    "Where its approval stands (`expired`: nobody decided before `approval_expires_at`)."
);
