"""Checks a fleet evidence bundle offline: no database, no network.

A bundle (`fleetctl evidence OP > op.evidence.json`, or `GET /v1/operations/{id}/evidence`)
holds one operation's record in parts, each part's SHA-256, and the deployment's Ed25519
signature over the rest (docs/api.md, "Evidence bundles"). This module makes the same
checks as `fleetctl verify`, in the same words, with only `rfc8785` and `cryptography`
(`pip install 'fleet-client[verify]'`): every part against its signed digest, the snapshot
against its hash, each approver's signature (Ed25519, or a passkey's WebAuthn assertion)
against the key in the bundle and the key's validity when it was used, each key's signed
registration down to the deployment's evidence key, each mandate's signature and terms, the
quorum under the policy in the bundle, the provider's receipt, and the deployment's signature.

    python -m fleet_client.evidence op.evidence.json [--key-id ID | --public-key FILE]

Exit 0 when every check held, 1 naming the parts that failed, 2 for a file that cannot be
read. It imports nothing else of fleet_client, so it runs wherever those two packages are.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

FORMAT = "fleet.evidence.v1"
REGISTRATION_STATEMENT = "fleet.key-registration.v1"
MANDATE_STATEMENT = "fleet.mandate.v1"
# The longest registration chain followed.
MAX_DEPTH = 32
PARTS = (
    "snapshot",
    "policy",
    "approvals",
    "mandates",
    "attempts",
    "provider",
    "events",
    "payee",
    "operation",
)
# What an absent count reads as (Rust's u64::MAX): a quorum that can never be met.
NO_COUNT = 2**64 - 1
# WebAuthn's authenticator data flags: user present, user verified.
FLAG_UP = 0x01
FLAG_UV = 0x04


def g(value: Any, *path: Union[str, int]) -> Any:
    """The member at `path`, or None where any step is missing."""
    for step in path:
        if isinstance(step, str) and isinstance(value, dict):
            value = value.get(step)
        elif isinstance(step, int) and isinstance(value, list) and 0 <= step < len(value):
            value = value[step]
        else:
            return None
    return value


def s(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def arr(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return NO_COUNT


def shown(value: Any) -> str:
    """A JSON value as the Rust verifier writes it in its words."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def canonical(value: Any) -> bytes:
    return rfc8785.dumps(value)


def digest(part: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(part)).hexdigest()


def signed_bytes(doc: dict[str, Any]) -> bytes:
    return canonical({k: v for k, v in doc.items() if k != "signature"})


def b64url(text: Any) -> Optional[bytes]:
    """Unpadded base64url, strictly (as the bundle writes keys and signatures)."""
    if not isinstance(text, str) or "=" in text:
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass
class Key:
    """A public key as the bundle holds it."""

    algorithm: str
    raw: bytes
    rp_id: Optional[str] = None
    origin: Optional[str] = None

    def key_id(self) -> str:
        prefix = "ed25519" if self.algorithm == "ed25519" else "passkey"
        return f"{prefix}:{hashlib.sha256(self.raw).hexdigest()[:32]}"

    def verifies(self, message: bytes, signature: bytes) -> bool:
        if self.algorithm == "ed25519":
            if len(signature) != 64:
                return False
            try:
                Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
                return True
            except (InvalidSignature, ValueError):
                return False
        return self._passkey_verifies(message, signature)

    def _passkey_verifies(self, message: bytes, stored: bytes) -> bool:
        """A WebAuthn assertion (ES256) whose challenge is the SHA-256 of `message`."""
        parts = assertion(stored)
        if parts is None or self.rp_id is None or self.origin is None:
            return False
        data, client_json, der = parts
        try:
            client = json.loads(client_json)
        except (ValueError, UnicodeDecodeError):
            return False
        if not isinstance(client, dict) or client.get("type") != "webauthn.get":
            return False
        challenge = base64.urlsafe_b64encode(hashlib.sha256(message).digest()).rstrip(b"=").decode()
        if client.get("challenge") != challenge or client.get("origin") != self.origin:
            return False
        if data[:32] != hashlib.sha256(self.rp_id.encode()).digest():
            return False
        if data[32] & (FLAG_UP | FLAG_UV) != FLAG_UP | FLAG_UV:
            return False
        try:
            point = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), self.raw)
            point.verify(der, data + hashlib.sha256(client_json).digest(), ec.ECDSA(hashes.SHA256()))
            return True
        except (InvalidSignature, ValueError):
            return False


def assertion(stored: bytes) -> Optional[tuple[bytes, bytes, bytes]]:
    """A passkey's stored assertion: authenticator data and client data, each after its
    two-byte big-endian length, then the DER signature."""
    out = []
    rest = stored
    for _ in range(2):
        if len(rest) < 2:
            return None
        n = int.from_bytes(rest[:2], "big")
        if len(rest) < 2 + n:
            return None
        out.append(rest[2 : 2 + n])
        rest = rest[2 + n :]
    data, client_json = out
    if len(data) < 37 or not client_json or not rest:
        return None
    return data, client_json, rest


def stored_key(key: Any) -> Optional[Key]:
    raw = b64url(g(key, "public_key"))
    algorithm = s(g(key, "algorithm"))
    if raw is None:
        return None
    if algorithm == "ed25519" and len(raw) == 32:
        return Key("ed25519", raw)
    rp_id, origin = s(g(key, "rp_id")), s(g(key, "origin"))
    if algorithm == "es256" and len(raw) == 65 and raw[0] == 4 and rp_id and origin:
        return Key("es256", raw, rp_id, origin)
    return None


def parse_public_key(text: str) -> Optional[Key]:
    """An Ed25519 public key as `fleetctl key generate` writes it (base64url or base64)."""
    text = text.strip()
    raw = b64url(text)
    if raw is None:
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
    return Key("ed25519", raw) if len(raw) == 32 else None


@dataclass
class Finding:
    part: str
    ok: bool
    words: str


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    proves: list[str] = field(default_factory=list)
    cannot: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return bool(self.findings) and all(f.ok for f in self.findings)

    def check(self, part: str, ok: bool, words: str) -> bool:
        self.findings.append(Finding(part, ok, words))
        return ok

    def failed_parts(self) -> list[str]:
        parts: list[str] = []
        for f in self.findings:
            if not f.ok and f.part not in parts:
                parts.append(f.part)
        return parts


@dataclass
class Trust:
    """Whom the deployment's signature must be from: one of `keys`, or the bundle's own
    key if its id is `pinned_id`. Neither: the bundle's own key, said to be unchecked."""

    keys: Optional[list[Key]] = None
    pinned_id: Optional[str] = None


def verify(doc: Any, trust: Trust) -> Report:
    r = Report()
    if not r.check("format", g(doc, "format") == FORMAT, f"the format is {FORMAT}"):
        return r
    parts = g(doc, "parts")
    for part in PARTS:
        ok = g(doc, "digests", part) == digest(g(parts, part))
        r.check(
            part,
            ok,
            "unchanged since signed (its digest matches)" if ok else "CHANGED: its digest is not the one signed",
        )
    members = g(parts, "snapshot", "members")
    hash_ = s(g(parts, "snapshot", "hash")) or ""
    hash_ok = (
        digest(members) == hash_
        and g(members, "operation_id") == g(doc, "operation_id")
        and g(members, "tenant_id") == g(doc, "tenant_id")
    )
    r.check(
        "snapshot",
        hash_ok,
        f"its RFC 8785 SHA-256 is {hash_}"
        if hash_ok
        else "CHANGED: the snapshot's hash is not the one recorded (or it is another operation's)",
    )
    policy_ok = g(parts, "policy", "version") == g(members, "policy_version")
    r.check(
        "policy",
        policy_ok,
        f"policy {shown(g(parts, 'policy', 'version'))} is the snapshot's{'' if policy_ok else ': NOT'}",
    )
    chains = Chains(_roots(doc, trust))
    signed = _approvals(r, parts, hash_, chains)
    mandates = _mandates(r, parts, chains)
    _quorum(r, parts, hash_, signed, mandates)
    _provider(r, parts)
    _deployment_signature(r, doc, trust)
    r.cannot = [c for c in arr(g(doc, "cannot_prove")) if isinstance(c, str)]
    if trust.keys is None and trust.pinned_id is None:
        r.cannot.append(
            f"That {s(g(doc, 'signature', 'key_id')) or '?'} is the deployment's evidence key: no key was named, "
            "so the bundle's own was taken. Compare it with GET /v1/evidence-keys, or name it with --key-id or --public-key."
        )
    if r.ok():
        _words(r, parts, hash_, signed, chains, mandates)
    return r


def _roots(doc: Any, trust: Trust) -> list[Key]:
    """The keys a registration chain may end at: the evidence keys the bundle is checked
    against (the bundle's own signer, when that is the one pinned or none was named)."""
    if trust.keys is not None:
        return list(trust.keys)
    text = s(g(doc, "signature", "public_key"))
    key = parse_public_key(text) if text is not None else None
    pinned = trust.pinned_id if trust.pinned_id is not None else s(g(doc, "signature", "key_id"))
    return [key] if key is not None and key.key_id() == pinned else []


def time_text(text: Any) -> Optional[str]:
    """A registration's time, if written as the database writes times (microseconds, Z)."""
    if isinstance(text, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", text):
        return text
    return None


def _registration(statement: Any) -> Optional[dict[str, Any]]:
    """A registration statement this verifier reads, or None."""
    if not isinstance(statement, dict) or statement.get("statement") != REGISTRATION_STATEMENT:
        return None
    members = {
        "statement", "principal", "role", "tenants", "key_id", "algorithm", "public_key",
        "rp_id", "origin", "registered_at", "registered_by", "registrar",
    }
    if set(statement) != members or time_text(statement.get("registered_at")) is None:
        return None
    registrar = statement.get("registrar")
    if not isinstance(registrar, dict):
        return None
    kind = registrar.get("kind")
    if kind == "admin" and set(registrar) == {"kind", "principal", "key_id"}:
        return statement
    if kind == "evidence_key" and set(registrar) == {"kind", "key_id", "public_key"}:
        root = parse_public_key(s(registrar.get("public_key")) or "")
        return statement if root is not None and root.key_id() == registrar.get("key_id") else None
    return None


class Chains:
    """Each key's registration checked once, down to the root."""

    def __init__(self, roots: list[Key]) -> None:
        self.roots = roots
        self.checked: dict[str, bool] = {}
        self.legacy: list[str] = []

    def check(self, r: Report, key: Any, depth: int = 0) -> bool:
        id_ = s(g(key, "key_id")) or "?"
        if id_ in self.checked:
            return self.checked[id_]
        part = f"registration of {id_}"
        # Unsigned: a key registered before registrations were signed, or a key in a bundle
        # made before bundles carried registrations (no `registration_legacy`).
        unsigned = g(key, "registration_legacy") is True or (
            isinstance(key, dict) and "registration_legacy" not in key and key.get("registration_signed") is False
        )
        if unsigned:
            self.legacy.append(id_)
            self.checked[id_] = True
            r.check(
                part,
                True,
                "NOT signed: registered before registrations were signed; only the database's record says "
                f"{s(g(key, 'registered_by')) or '?'} registered it at {s(g(key, 'registered_at')) or '?'}",
            )
            return True
        ok, words = self._link(r, key, depth)
        self.checked[id_] = ok
        r.check(part, ok, words)
        return ok

    def _link(self, r: Report, key: Any, depth: int) -> tuple[bool, str]:
        st = _registration(g(key, "registration"))
        if st is None:
            return False, "NO signed registration this verifier reads"
        public = stored_key(key)
        if public is None:
            return False, "its public key is not one this verifier reads"
        described = (
            stored_key({"algorithm": st["algorithm"], "public_key": st["public_key"], "rp_id": st["rp_id"], "origin": st["origin"]})
            == public
            and st["key_id"] == public.key_id()
            and s(g(key, "key_id")) == public.key_id()
            and s(g(key, "principal")) == st["principal"]
            and s(g(key, "registered_at")) == st["registered_at"]
        )
        if not described:
            return False, "the signed registration does NOT describe this key (key, principal or time changed)"
        signature = b64url(g(key, "registration_signature"))
        if signature is None:
            return False, "the registration's signature is missing or unreadable"
        message = canonical(st)
        registrar = st["registrar"]
        when = st["registered_at"]
        if registrar["kind"] == "evidence_key":
            root = parse_public_key(registrar["public_key"])
            assert root is not None
            if st["role"] != "admin":
                return False, "the deployment's evidence key registered a key that is NOT an administrator's"
            if not root.verifies(message, signature):
                return False, "the registration's signature does NOT verify with the deployment's evidence key it names"
            if not any(k.raw == root.raw for k in self.roots):
                return False, (
                    f"signed by {root.key_id()}, which is NOT the evidence key this bundle is checked against "
                    "(name an earlier evidence key with --public-key)"
                )
            return True, (
                f"{st['principal']} ({st['role']}) was registered at {when} with the deployment's evidence key "
                f"{root.key_id()} (the root)"
            )
        principal, key_id = registrar["principal"], registrar["key_id"]
        above = g(key, "registrar")
        if s(g(above, "key_id")) != key_id or s(g(above, "principal")) != principal:
            return False, f"the registrar's key {key_id} is NOT in the bundle"
        above_key = stored_key(above)
        if above_key is None or above_key.key_id() != key_id:
            return False, "the registrar's key is NOT the one the registration names"
        if not above_key.verifies(message, signature):
            return False, f"the registration's signature does NOT verify with the registrar {principal}'s key {key_id}"
        if not _key_valid_at(above, when):
            return False, f"the registrar {principal}'s key {key_id} was NOT valid at {when}"
        if depth >= MAX_DEPTH or not self.check(r, above, depth + 1):
            return False, f"the registrar {principal}'s own key {key_id} is NOT vouched for (its registration fails)"
        above_st = _registration(g(above, "registration"))
        if above_st is not None and above_st["role"] != "admin":
            return False, f"the registrar {principal} is NOT an administrator"
        return True, (
            f"{st['principal']} ({st['role']}) was registered at {when}, signed by administrator {principal} "
            f"with key {key_id}"
        )


def _key_valid_at(key: Any, at: str) -> bool:
    registered = s(g(key, "registered_at")) or "~"
    removed = s(g(key, "removed_at"))
    return registered <= at and (removed is None or removed > at)


def _approvals(r: Report, parts: Any, hash_: str, chains: Chains) -> int:
    signers: set[str] = set()
    op_id = g(parts, "snapshot", "members", "operation_id")
    for a in arr(g(parts, "approvals")):
        who = s(g(a, "principal")) or "?"
        part = f"approval by {who}"
        batch = g(a, "batch")
        if isinstance(batch, dict):
            ok = _batch_signature_holds(batch, g(a, "key"), op_id, hash_) and s(g(a, "key", "principal")) == who
            r.check(
                part,
                ok,
                "the batch's signature verifies and lists this operation and hash"
                if ok
                else "the batch's signature does NOT verify, or it does not list this operation",
            )
            valid = _key_valid_at(g(a, "key"), s(g(batch, "at")) or "")
            r.check(
                f"key of {who}",
                valid,
                "registered before the batch was signed and not removed then"
                if valid
                else "NOT valid when the batch was signed",
            )
            vouched = chains.check(r, g(a, "key"))
            if ok and valid and vouched and g(a, "voided_at") is None:
                signers.add(who)
            continue
        if g(a, "signature") is None:
            continue
        statement = g(a, "statement")
        key = g(a, "key")
        public = stored_key(key)
        signature = b64url(g(a, "signature"))
        bound = g(statement, "operation_id") == op_id and s(g(statement, "payload_hash")) == hash_
        verifies = public is not None and signature is not None and public.verifies(canonical(statement), signature)
        id_ok = (public.key_id() if public else None) == s(g(key, "key_id"))
        theirs = s(g(key, "principal")) == who
        valid = _key_valid_at(key, s(g(a, "at")) or "")
        ok = verifies and bound and id_ok and theirs
        r.check(
            part,
            ok,
            f"the signature by key {s(g(key, 'key_id')) or '?'} verifies over the statement of this snapshot"
            if ok
            else "the signature does NOT verify (statement, signature or key changed, or the key is not the approver's)",
        )
        r.check(
            f"key of {who}",
            valid,
            "registered before the approval and not removed then (a later removal does not undo it)"
            if valid
            else "NOT valid when the approval was given",
        )
        vouched = isinstance(key, dict) and chains.check(r, key)
        if ok and valid and vouched and g(a, "voided_at") is None:
            signers.add(who)
    return len(signers)


def _mandates(r: Report, parts: Any, chains: Chains) -> set[str]:
    """Checks each mandate listed; the ids of those that hold in every respect."""
    holding: set[str] = set()
    for m in arr(g(parts, "mandates")):
        id_ = s(g(m, "mandate_id")) or "?"
        key = g(m, "key")
        public = stored_key(key)
        signature = b64url(g(m, "signature"))
        verifies = public is not None and signature is not None and public.verifies(canonical(g(m, "statement")), signature)
        theirs = (
            (public.key_id() if public else None) == s(g(m, "key_id"))
            and g(key, "key_id") == g(m, "key_id")
            and g(key, "principal") == g(m, "signed_by")
        )
        signed = r.check(
            f"mandate {id_}",
            verifies and theirs,
            f"{s(g(m, 'signed_by')) or '?'} signed it with key {s(g(m, 'key_id')) or '?'}: the signature verifies over its statement"
            if verifies and theirs
            else "the mandate's signature does NOT verify (statement, signature or key changed, or the key is not the signer's)",
        )
        stored_at = s(g(m, "stored_at")) or ""
        valid = r.check(
            f"key of mandate {id_}",
            _key_valid_at(key, stored_at),
            f"registered before the mandate was stored ({stored_at}) and not removed then"
            if _key_valid_at(key, stored_at)
            else "NOT valid when the mandate was stored",
        )
        vouched = isinstance(key, dict) and chains.check(r, key)
        covered, words = _terms(m, parts)
        covered = r.check(f"terms of mandate {id_}", covered, words)
        if signed and valid and vouched and covered:
            holding.add(id_)
    return holding


def _seconds(text: Any) -> Optional[str]:
    """A mandate's window bound (RFC 3339, whole seconds, Z) as comparable text."""
    if isinstance(text, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", text):
        return text[:-1] + ".000000Z"
    return None


def _terms(m: Any, parts: Any) -> tuple[bool, str]:
    """Whether the mandate's signed terms cover the operation (as fleet_core's
    Mandate::covers reads them), in words either way."""
    st = g(m, "statement")
    members = g(parts, "snapshot", "members")
    payload = g(members, "payload")
    amount = g(payload, "amount_minor")
    valid_from, valid_until = _seconds(g(st, "valid_from")), _seconds(g(st, "valid_until"))
    limit = g(st, "per_operation_max_minor")
    if (
        not isinstance(st, dict)
        or st.get("statement") != MANDATE_STATEMENT
        or valid_from is None
        or valid_until is None
        or not isinstance(limit, int)
        or not isinstance(st.get("actions"), list)
    ):
        return False, "the mandate's statement is NOT one this verifier reads"
    payee = g(parts, "payee")
    found = isinstance(payee, dict) and payee.get("status") == "found"
    payees = st.get("payees")
    if payees == "any_verified":
        payee_ok = found and g(payee, "verified") is True
    else:
        payee_ok = found and any(
            g(p, "id") == g(payee, "id") and g(p, "account_fingerprint") == g(payee, "account", "fingerprint")
            for p in arr(payees)
        )
    for_principal = st.get("for_principal")
    covers = (
        st.get("tenant_id") == g(members, "tenant_id")
        and (for_principal is None or for_principal == g(parts, "operation", "submitted_by"))
        and g(members, "action") in st["actions"]
        and g(payload, "currency") == st.get("currency")
        and isinstance(amount, int)
        and not isinstance(amount, bool)
        and 1 <= amount <= limit
        and payee_ok
    )
    used_at = time_text(g(m, "at"))
    checks = [
        (g(m, "mandate_id") == st.get("mandate_id"), "it is another mandate's statement"),
        (covers, "its terms (tenant, action, principal, currency, amount limit or payee) do NOT cover this operation"),
        (g(m, "amount_minor") == amount, "the amount used is NOT the operation's"),
        (used_at is not None and valid_from <= used_at < valid_until, "it was used OUTSIDE its validity window"),
    ]
    for ok, why in checks:
        if not ok:
            return False, why
    payee_id = s(g(payee, "id")) or s(g(payload, "beneficiary_id")) or "?"
    return True, (
        f"its signed terms cover this operation: {g(members, 'action')} of {amount} {st.get('currency')} "
        f"(at most {limit} each), payee {payee_id}, used {s(g(m, 'at'))} within {st.get('valid_from')} to {st.get('valid_until')}"
    )


def _batch_signature_holds(batch: Any, key: Any, op_id: Any, hash_: str) -> bool:
    statement = g(batch, "statement")
    lists = any(
        g(o, "operation_id") == op_id and s(g(o, "payload_hash")) == hash_
        for o in arr(g(statement, "operations"))
    )
    public = stored_key(key)
    signature = b64url(g(batch, "signature"))
    verifies = public is not None and signature is not None and public.verifies(canonical(statement), signature)
    return lists and verifies and g(batch, "key_id") == g(key, "key_id")


def _quorum(r: Report, parts: Any, hash_: str, signed: int, mandates: set[str]) -> None:
    required = count(g(parts, "policy", "applied", "approvals_required"))
    signatures = count(g(parts, "policy", "applied", "signatures_required"))
    live = {
        s(g(a, "principal"))
        for a in arr(g(parts, "approvals"))
        if g(a, "voided_at") is None and s(g(a, "payload_hash")) == hash_ and s(g(a, "principal")) is not None
    }
    decided_by = s(g(parts, "operation", "decided_by"))
    # A mandate counts only when its signature, key and terms held above.
    by_mandate = bool(decided_by and decided_by.startswith("mandate:") and decided_by[len("mandate:") :] in mandates)
    ok = by_mandate or (len(live) >= required and signed >= signatures)
    r.check(
        "quorum",
        ok,
        "approved by a mandate listed in the bundle, whose signature and terms hold"
        if by_mandate
        else f"{len(live)} of {required} approvals, {signed} of {signatures} signed{'' if ok else ': NOT met'}",
    )


def _provider(r: Report, parts: Any) -> None:
    operation = g(parts, "operation")
    if g(operation, "status") != "succeeded":
        return
    p = g(parts, "provider")
    object_id = s(g(p, "object_id")) or ""
    c = g(p, "confirmation")
    by = s(g(c, "by")) or ""
    named = s(g(c, "object_id")) == object_id and s(g(operation, "external_id")) == object_id
    evidence = s(g(c, "evidence"))
    ok = (bool(object_id) and named and bool(by)) or (by == "operator" and bool(evidence and evidence.strip()))
    r.check(
        "provider",
        ok,
        f"succeeded with provider object {object_id}, confirmed by {by}"
        if ok
        else "the receipt does NOT name the operation's provider object",
    )
    key = s(g(p, "idempotency_key")) or ""
    references: list[str] = []
    if g(c, "by") == "answer":
        for a in arr(g(parts, "attempts")):
            if g(a, "fence") == g(c, "fence") and s(g(a, "external_id")) == object_id:
                ref = s(g(a, "response", "reference"))
                if ref is not None:
                    references.append(ref)
    elif g(c, "by") == "webhook":
        for w in arr(g(p, "webhooks")):
            if g(w, "event_id") == g(c, "webhook_event_id"):
                ref = s(g(w, "reference"))
                if ref is not None:
                    references.append(ref)
    if references:
        ok = all(ref == key for ref in references)
        r.check(
            "provider",
            ok,
            f"the provider's record names this operation's key {key}"
            if ok
            else "the provider's record names ANOTHER key",
        )


def _deployment_signature(r: Report, doc: Any, trust: Trust) -> None:
    sig = g(doc, "signature")
    text = s(g(sig, "public_key"))
    key = parse_public_key(text) if text is not None else None
    if key is None:
        trusted = False
    elif trust.keys is not None:
        trusted = any(k.raw == key.raw for k in trust.keys)
    else:
        pinned = trust.pinned_id if trust.pinned_id is not None else s(g(sig, "key_id"))
        trusted = pinned is not None and pinned == key.key_id() and g(sig, "key_id") == pinned
    value = b64url(g(sig, "value"))
    verifies = key is not None and value is not None and key.verifies(signed_bytes(doc), value)
    if trusted and verifies:
        words = f"the deployment's evidence key {s(g(sig, 'key_id')) or '?'} signed this document"
    elif not trusted:
        words = "the signing key is NOT the deployment's evidence key"
    else:
        words = "the deployment's signature does NOT verify: the document was changed after signing"
    r.check("signature", trusted and verifies, words)


def _words(r: Report, parts: Any, hash_: str, signed: int, chains: Chains, mandates: set[str]) -> None:
    members = g(parts, "snapshot", "members")
    approvers = [
        s(g(a, "principal"))
        for a in arr(g(parts, "approvals"))
        if g(a, "voided_at") is None and s(g(a, "principal")) is not None
    ]
    r.proves.append(
        f"Operation {s(g(members, 'operation_id')) or '?'} of tenant {s(g(members, 'tenant_id')) or '?'} "
        f"({s(g(members, 'action')) or '?'}) is exactly the snapshot {hash_}."
    )
    r.proves.append(
        f"It was approved by {', '.join(a for a in approvers if a) if approvers else 'a mandate'} ({signed} with their own "
        "key's signature over this snapshot, each key registered before and not removed at the time), "
        f"meeting the quorum of policy {shown(g(parts, 'policy', 'version'))}."
    )
    for id_ in sorted(mandates):
        r.proves.append(
            f"Mandate {id_} was signed by its signer's registered key, valid when it was stored, and its signed terms "
            "(action, currency, amount limit, payee, validity window) cover this operation."
        )
    if not chains.legacy:
        r.proves.append(
            "Every key that signed here was registered by an administrator's signature, each administrator's key in turn "
            "down to the deployment's evidence key."
        )
    else:
        r.proves.append(
            "Every key that signed here was registered by an administrator's signature down to the deployment's evidence "
            f"key, except {', '.join(chains.legacy)} (registered before registrations were signed)."
        )
    p = g(parts, "provider")
    if g(parts, "operation", "status") == "succeeded":
        r.proves.append(
            f"The fleet recorded its success as provider object {s(g(p, 'object_id')) or '?'}, "
            f"confirmed by {s(g(p, 'confirmation', 'by')) or '?'}."
        )
    else:
        r.proves.append(f"The fleet recorded it as {s(g(parts, 'operation', 'status')) or '?'}.")
    r.proves.append("Nothing in this document changed since the deployment's evidence key signed it.")


def lines(doc: Any, report: Report) -> list[str]:
    """The report in words, as `fleetctl verify` prints it."""
    out = [
        f"{'VERIFIED' if report.ok() else 'NOT VERIFIED'}: evidence bundle of {s(g(doc, 'operation_id')) or '?'} "
        f"(tenant {s(g(doc, 'tenant_id')) or '?'}), made {s(g(doc, 'made_at')) or '?'}",
        "checks:",
    ]
    width = max((len(f.part) for f in report.findings), default=0)
    for f in report.findings:
        out.append(f"  {'ok  ' if f.ok else 'FAIL'}  {f.part:<{width}}  {f.words}")
    if report.ok():
        out.append("it proves:")
        out.extend(f"  - {p}" for p in report.proves)
    out.append("it cannot prove:")
    out.extend(f"  - {c}" for c in report.cannot)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fleet_client.evidence",
        description="Check a fleet evidence bundle offline (no database, no network).",
    )
    parser.add_argument("file", help="the bundle (fleetctl evidence OP > FILE)")
    named = parser.add_mutually_exclusive_group()
    named.add_argument("--key-id", help="the deployment's evidence key id the bundle must be signed by")
    named.add_argument("--public-key", help="a file holding the deployment's evidence public key")
    args = parser.parse_args(argv)
    try:
        with open(args.file, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: reading the evidence bundle {args.file}: {e}", file=sys.stderr)
        return 2
    trust = Trust()
    if args.key_id is not None:
        trust.pinned_id = args.key_id
    elif args.public_key is not None:
        try:
            with open(args.public_key, encoding="utf-8") as f:
                key = parse_public_key(f.read())
        except OSError as e:
            print(f"error: reading the public key {args.public_key}: {e}", file=sys.stderr)
            return 2
        if key is None:
            print(f"error: {args.public_key} holds no Ed25519 public key", file=sys.stderr)
            return 2
        trust.keys = [key]
    report = verify(doc, trust)
    for line in lines(doc, report):
        print(line)
    if report.ok():
        return 0
    print(
        f"error: the evidence bundle {args.file} does NOT verify: {', '.join(report.failed_parts())}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
