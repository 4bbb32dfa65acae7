//! What every handler of the console uses: the state its routes are served with, and a
//! page rendered from its template.

use std::sync::Arc;

use axum::extract::FromRef;
use axum::response::{Html, IntoResponse, Response};

use super::setup::Console;
use crate::state::AppState;

/// The console's routes' state: what every handler of the API shares, and the console as
/// configured (its routes exist only when it is). A handler takes either part as its
/// `State`.
#[derive(Clone)]
pub struct ConsoleState {
    pub app: AppState,
    pub console: Arc<Console>,
}

impl FromRef<ConsoleState> for AppState {
    fn from_ref(state: &ConsoleState) -> AppState {
        state.app.clone()
    }
}

impl FromRef<ConsoleState> for Arc<Console> {
    fn from_ref(state: &ConsoleState) -> Arc<Console> {
        state.console.clone()
    }
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
