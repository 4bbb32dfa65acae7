//! What every handler of the console uses: the console as configured, and a page rendered
//! from its template.

use std::sync::Arc;

use axum::response::{Html, IntoResponse, Response};

use super::setup::Console;
use crate::state::AppState;

/// The console as configured (routes exist only when it is).
pub(crate) fn console(state: &AppState) -> &Arc<Console> {
    state
        .console
        .as_ref()
        .expect("console routes are mounted only with a console")
}

/// A rendered template, or a plain 500 if a template could not render (a bug).
pub(crate) fn html(rendered: askama::Result<String>) -> Response {
    match rendered {
        Ok(body) => Html(body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a console page did not render");
            (
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
                .into_response()
        }
    }
}
