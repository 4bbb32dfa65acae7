// The console's only script: it carries bytes between the page and the person's
// authenticator (WebAuthn has no form to post). Every check is the server's: the API
// verifies the registration, and the approval's assertion is verified by the API before
// it is recorded and by fleet-execute again before any payment.
"use strict";

const b64url = {
  encode(buffer) {
    let text = "";
    for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  },
  decode(text) {
    const plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(plain, (c) => c.charCodeAt(0));
  },
};

function showError(id, message) {
  const box = document.getElementById(id);
  if (box) {
    box.textContent = message;
    box.hidden = false;
  }
}

async function postJson(path, token, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-fleet-form-token": token },
    body: JSON.stringify(body ?? {}),
    credentials: "same-origin",
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error || `the console answered ${response.status}`);
  return answer;
}

// Passkeys page: create a passkey, file it for an administrator, show its key id.
async function createPasskey(button) {
  const token = button.dataset.formToken;
  button.disabled = true;
  try {
    const { request_id, options } = await postJson("/console/passkeys/start", token);
    const publicKey = options.publicKey;
    publicKey.challenge = b64url.decode(publicKey.challenge);
    publicKey.user.id = b64url.decode(publicKey.user.id);
    for (const c of publicKey.excludeCredentials || []) c.id = b64url.decode(c.id);
    const created = await navigator.credentials.create({ publicKey });
    await postJson("/console/passkeys/finish", token, {
      request_id,
      credential: {
        id: created.id,
        rawId: b64url.encode(created.rawId),
        type: created.type,
        response: {
          attestationObject: b64url.encode(created.response.attestationObject),
          clientDataJSON: b64url.encode(created.response.clientDataJSON),
        },
        extensions: created.getClientExtensionResults(),
      },
    });
    window.location.reload();
  } catch (e) {
    showError("passkey-error", `No passkey was created: ${e.message}`);
    button.disabled = false;
  }
}

// Operation page (an approval), mandate and batch pages: sign the statement shown (its
// hash is the challenge) and post the form with the assertion.
async function approveWithPasskey(form) {
  const d = form.dataset;
  const button = form.querySelector("button");
  button.disabled = true;
  try {
    const allowCredentials = JSON.parse(d.credentials).map((id) => ({
      type: "public-key",
      id: b64url.decode(id),
    }));
    const assertion = await navigator.credentials.get({
      publicKey: {
        challenge: b64url.decode(d.challenge),
        rpId: d.rpId,
        allowCredentials,
        userVerification: "required",
        timeout: 120000,
      },
    });
    const r = assertion.response;
    form.elements.credential_id.value = b64url.encode(assertion.rawId);
    form.elements.authenticator_data.value = b64url.encode(r.authenticatorData);
    form.elements.client_data_json.value = b64url.encode(r.clientDataJSON);
    form.elements.signature.value = b64url.encode(r.signature);
    form.submit();
  } catch (e) {
    showError("passkey-error", `${d.failed || "Nothing was approved"}: ${e.message}`);
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const create = document.getElementById("create-passkey");
  if (create) create.addEventListener("click", () => createPasskey(create));
  for (const form of document.querySelectorAll("#approve-passkey-form, form.sign-with-passkey")) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      approveWithPasskey(form);
    });
  }
});
