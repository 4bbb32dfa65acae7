//! A real, headless Chromium (Debian's `chromium`, driven through Debian's
//! `chromedriver`) for the console tests: a fresh profile per browser, nothing fetched
//! from the network, and closed when the test ends.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};

use crate::{eventually, free_port};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub struct Browser {
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

impl Browser {
    pub async fn start() -> Browser {
        assert!(
            std::path::Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: .ci/browser installs Debian's chromium"
        );
        assert!(
            std::path::Path::new(CHROMEDRIVER).exists(),
            "{CHROMEDRIVER} is missing: .ci/browser installs Debian's chromium-driver"
        );
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = std::env::temp_dir().join(format!("fleet-chromium-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&profile).unwrap();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1000",
            &format!("--user-data-dir={}", profile.display()),
        ];
        let caps = json!({"goog:chromeOptions": {"binary": CHROMIUM, "args": args}});
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        let url = format!("http://127.0.0.1:{port}");
        let client = eventually("chromedriver to start a browser", || {
            let (caps, url) = (caps.clone(), url.clone());
            async move {
                let mut builder = ClientBuilder::new(HttpConnector::new());
                builder.capabilities(caps);
                builder.connect(&url).await.ok()
            }
        })
        .await;
        Browser {
            client,
            driver,
            profile,
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("goto {url}: {e}"));
    }

    /// Waits (up to 20 s) for an element matching `css`.
    pub async fn find(&self, css: &str) -> Element {
        match self
            .client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(css))
            .await
        {
            Ok(e) => e,
            Err(e) => {
                let at = self.client.current_url().await.ok();
                let page = self.client.source().await.unwrap_or_default();
                panic!("no {css} on {at:?}: {e}\n{page}")
            }
        }
    }

    pub async fn click(&self, css: &str) {
        self.find(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Clicks `css` where the click leaves the page (a link, a form's button), and waits
    /// for the next page. chromedriver waits for a navigation only if it has begun by the
    /// time the click returns; on a busy machine a form's submission can begin later, and a
    /// test reading the page at once would read, or type into, the page being left.
    pub async fn click_through(&self, css: &str) {
        self.mark_document().await;
        self.click(css).await;
        self.until_next_document(&format!("the page after clicking {css}"))
            .await;
    }

    /// Runs `script`, which leaves the page (submits a form, say), and waits for the next
    /// page, as [`Browser::click_through`] does for a click.
    pub async fn execute_through(&self, script: &str, args: Vec<Value>) {
        self.mark_document().await;
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("run a script that leaves the page: {e}"));
        self.until_next_document("the page after the script").await;
    }

    /// Marks the current document: a navigation replaces its window object, and the mark
    /// with it.
    async fn mark_document(&self) {
        self.client
            .execute("window.__fleetLeaving = true;", vec![])
            .await
            .unwrap_or_else(|e| panic!("mark the page: {e}"));
    }

    /// Waits until the browser shows a fully loaded document without the mark.
    async fn until_next_document(&self, what: &str) {
        eventually(what, || async {
            let state = self
                .client
                .execute(
                    "return window.__fleetLeaving === true ? 'left' : document.readyState;",
                    vec![],
                )
                .await
                .ok()?;
            (state.as_str() == Some("complete")).then_some(())
        })
        .await;
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// The text of the element matching `css`, which must contain `words`.
    pub async fn text_with(&self, css: &str, words: &str) -> String {
        let text = self.text(css).await;
        assert!(text.contains(words), "{css} says {words:?}: {text}");
        text
    }

    /// Types `keys` into the field matching `css`.
    pub async fn type_into(&self, css: &str, keys: &str) {
        self.find(css)
            .await
            .send_keys(keys)
            .await
            .unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    /// The whole page's visible text.
    pub async fn page_text(&self) -> String {
        self.text("body").await
    }

    pub async fn path(&self) -> String {
        self.client.current_url().await.unwrap().path().to_owned()
    }

    /// Waits until the page (reloaded each time) shows `needle`.
    pub async fn reload_until_shows(&self, needle: &str) {
        eventually(&format!("the page to show {needle:?}"), || async {
            self.client.refresh().await.ok()?;
            self.page_text().await.contains(needle).then_some(())
        })
        .await;
    }

    /// Saves a PNG of the window to `name` under `CONSOLE_SCREENSHOTS_DIR` (or the test
    /// logs), for the docs.
    pub async fn screenshot(&self, name: &str) {
        let dir = std::env::var_os("CONSOLE_SCREENSHOTS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::bin_dir().join("test-logs").join("screenshots"));
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::write(dir.join(name), png).unwrap();
    }

    /// Signs in at the console's login page as the test issuer's `subject`, and waits for
    /// the console's first page.
    pub async fn sign_in(&self, console_url: &str, subject: &str) {
        self.goto(&format!("{console_url}/console")).await;
        self.click("#sign-in").await;
        self.click(&format!("button[value=\"{subject}\"]")).await;
        self.find("header.top").await;
    }

    /// Gives the browser a virtual authenticator (WebDriver's WebAuthn extension, as
    /// chromedriver implements it): a platform authenticator with resident keys that
    /// verifies its user (as a PIN or a fingerprint would) and makes ES256 passkeys.
    pub async fn add_virtual_authenticator(&self) -> String {
        let answer = self
            .client
            .issue_cmd(SessionCommand::post(
                "webauthn/authenticator",
                json!({
                    "protocol": "ctap2",
                    "transport": "internal",
                    "hasResidentKey": true,
                    "hasUserVerification": true,
                    "isUserConsenting": true,
                    "isUserVerified": true,
                }),
            ))
            .await
            .expect("chromedriver adds a virtual authenticator");
        answer
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| answer.to_string())
    }

    /// The credentials the virtual authenticator `id` holds.
    pub async fn authenticator_credentials(&self, id: &str) -> Vec<Value> {
        let answer = self
            .client
            .issue_cmd(SessionCommand::get(format!(
                "webauthn/authenticator/{id}/credentials"
            )))
            .await
            .expect("chromedriver lists the authenticator's credentials");
        answer.as_array().cloned().unwrap_or_default()
    }

    /// Lays the page out as a screen `width` CSS pixels wide would (DevTools' device
    /// metrics, through chromedriver: a headless window may not shrink below its minimum).
    pub async fn viewport(&self, width: u32, height: u32) {
        self.client
            .issue_cmd(SessionCommand::post(
                "goog/cdp/execute",
                json!({
                    "cmd": "Emulation.setDeviceMetricsOverride",
                    "params": {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700},
                }),
            ))
            .await
            .expect("chromedriver sets the device metrics");
    }

    /// Whether the page is wider than the window, i.e. a person would scroll sideways.
    pub async fn scrolls_sideways(&self) -> bool {
        self.client
            .execute(
                "const d = document.documentElement; return d.scrollWidth > d.clientWidth;",
                vec![],
            )
            .await
            .expect("measure the page")
            .as_bool()
            .unwrap_or(true)
    }

    /// Ends the WebDriver session (the browser quits), then the driver.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

/// Also when a test fails half-way: the driver is killed, which takes its browser with
/// it, and the profile is removed.
impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A command of a WebDriver extension under the session: chromedriver's WebAuthn
/// (W3C WebAuthn, "Automation") and DevTools endpoints.
#[derive(Debug)]
struct SessionCommand {
    path: String,
    method: reqwest::Method,
    body: Option<Value>,
}

impl SessionCommand {
    fn post(path: impl Into<String>, body: Value) -> SessionCommand {
        SessionCommand {
            path: path.into(),
            method: reqwest::Method::POST,
            body: Some(body),
        }
    }

    fn get(path: impl Into<String>) -> SessionCommand {
        SessionCommand {
            path: path.into(),
            method: reqwest::Method::GET,
            body: None,
        }
    }
}

impl WebDriverCompatibleCommand for SessionCommand {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/{}",
            session.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (reqwest::Method, Option<String>) {
        (
            self.method.clone(),
            self.body.as_ref().map(Value::to_string),
        )
    }
}
