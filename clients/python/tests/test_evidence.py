"""The offline evidence verifier on a bundle made here, signed with keys made here: it holds
as made, and each changed part is named (the Rust suite checks the same verifier against
bundles the real fleet signs)."""

from __future__ import annotations

import base64
import copy
import hashlib
from typing import Any

import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from fleet_client import evidence


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(raw: bytes) -> str:
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:32]


DEPLOYMENT = Ed25519PrivateKey.generate()
DANA = Ed25519PrivateKey.generate()
ALICE = Ed25519PrivateKey.generate()
AT = "2026-03-01T10:00:00.000000Z"


def key_record(
    key: Ed25519PrivateKey,
    principal: str,
    role: str,
    at: str,
    removed_at: Any,
    signer: Ed25519PrivateKey,
    registrar: Any = None,
) -> dict[str, Any]:
    """A key as a bundle carries it, its registration signed by `signer`: the deployment's
    evidence key (no `registrar`), or the administrator whose key record `registrar` is."""
    raw, signer_raw = public(key), public(signer)
    if registrar is None:
        by = {"kind": "evidence_key", "key_id": key_id(signer_raw), "public_key": b64(signer_raw)}
    else:
        by = {"kind": "admin", "principal": registrar["principal"], "key_id": key_id(signer_raw)}
    statement: dict[str, Any] = {
        "statement": "fleet.key-registration.v1",
        "principal": principal,
        "role": role,
        "tenants": ["org_1"],
        "key_id": key_id(raw),
        "algorithm": "ed25519",
        "public_key": b64(raw),
        "rp_id": None,
        "origin": None,
        "registered_at": at,
        "registered_by": "ops",
        "registrar": by,
    }
    return {
        "key_id": key_id(raw),
        "principal": principal,
        "algorithm": "ed25519",
        "public_key": b64(raw),
        "registered_at": at,
        "removed_at": removed_at,
        "registered_by": "ops",
        "registration_legacy": False,
        "registration": statement,
        "registration_signature": b64(signer.sign(rfc8785.dumps(statement))),
        "registrar_key_id": key_id(signer_raw),
        "registrar": registrar,
    }


def alices_key(removed_at: Any = None) -> dict[str, Any]:
    dana = key_record(DANA, "dana", "admin", "2026-01-01T00:00:00.000000Z", None, DEPLOYMENT)
    return key_record(ALICE, "alice", "approver", "2026-02-01T00:00:00.000000Z", removed_at, DANA, dana)


def bundle(removed_at: Any = None) -> dict[str, Any]:
    members = {
        "operation_id": "op_01J00000000000000000000000",
        "tenant_id": "org_1",
        "action": "payment.create",
        "provider": "payments",
        "target": None,
        "payload": {"amount_minor": 125000, "currency": "EUR", "beneficiary_id": "vendor_77"},
        "policy_version": "quorum-v1",
        "data_version": "1",
    }
    hash_ = evidence.digest(members)
    statement = {"statement": "fleet.approval.v4", "operation_id": members["operation_id"], "payload_hash": hash_}
    parts = {
        "snapshot": {"members": members, "hash": hash_},
        "policy": {"version": "quorum-v1", "text": "[payment]\n", "applied": {"approvals_required": 1, "signatures_required": 1}},
        "approvals": [
            {
                "principal": "alice",
                "at": AT,
                "payload_hash": hash_,
                "voided_at": None,
                "statement": statement,
                "signature": b64(ALICE.sign(rfc8785.dumps(statement))),
                "key": alices_key(removed_at),
                "batch": None,
            }
        ],
        "mandates": [],
        "attempts": [{"fence": 1, "external_id": "pay_1", "response": {"id": "pay_1", "reference": "key_1"}}],
        "provider": {
            "object_id": "pay_1",
            "idempotency_key": "key_1",
            "confirmation": {"by": "answer", "object_id": "pay_1", "fence": 1},
            "webhooks": [],
        },
        "events": [],
        "payee": None,
        "operation": {"status": "succeeded", "external_id": "pay_1", "decided_by": "alice"},
    }
    doc: dict[str, Any] = {
        "format": evidence.FORMAT,
        "operation_id": members["operation_id"],
        "tenant_id": "org_1",
        "made_at": AT,
        "parts": parts,
        "cannot_prove": ["The provider's own records were not consulted."],
    }
    return signed(doc)


def signed(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its digests made again and signed by the deployment: a change made inside
    a part is then the only one a verifier sees."""
    doc = {k: v for k, v in doc.items() if k != "signature"}
    doc["digests"] = {p: evidence.digest(doc["parts"][p]) for p in evidence.PARTS}
    deployment = public(DEPLOYMENT)
    doc["signature"] = {
        "algorithm": "ed25519",
        "key_id": key_id(deployment),
        "public_key": b64(deployment),
        "value": b64(DEPLOYMENT.sign(evidence.signed_bytes(doc))),
    }
    return doc


TRUST = evidence.Trust(pinned_id=key_id(public(DEPLOYMENT)))


def test_a_bundle_verifies_as_made_and_says_what_it_proves_and_cannot() -> None:
    report = evidence.verify(bundle(), TRUST)
    assert report.ok(), report.findings
    assert any("pay_1" in p for p in report.proves)
    assert any("not consulted" in c for c in report.cannot)
    # A key removed after the approval still counts; one removed before does not.
    assert evidence.verify(bundle("2026-04-01T00:00:00.000000Z"), TRUST).ok()
    early = evidence.verify(bundle("2026-02-15T00:00:00.000000Z"), TRUST)
    assert early.failed_parts() == ["key of alice", "quorum"]


def test_a_changed_part_is_named() -> None:
    doc = bundle()
    d = copy.deepcopy(doc)
    d["parts"]["snapshot"]["members"]["payload"]["amount_minor"] = 125001
    assert evidence.verify(d, TRUST).failed_parts() == ["snapshot", "signature"]
    d = copy.deepcopy(doc)
    d["parts"]["policy"]["text"] += "#"
    assert evidence.verify(d, TRUST).failed_parts() == ["policy", "signature"]
    d = copy.deepcopy(doc)
    d["parts"]["provider"]["object_id"] = "pay_2"
    assert evidence.verify(d, TRUST).failed_parts() == ["provider", "signature"]
    d = copy.deepcopy(doc)
    sig = d["parts"]["approvals"][0]["signature"]
    d["parts"]["approvals"][0]["signature"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    assert evidence.verify(d, TRUST).failed_parts() == ["approvals", "approval by alice", "quorum", "signature"]
    # Another deployment's key: neither the bundle's signer nor its chain's root.
    other = evidence.Trust(pinned_id=key_id(public(Ed25519PrivateKey.generate())))
    assert evidence.verify(doc, other).failed_parts() == [
        f"registration of {key_id(public(DANA))}",
        f"registration of {key_id(public(ALICE))}",
        "quorum",
        "signature",
    ]


def test_the_registration_chain_is_checked_down_to_the_evidence_key() -> None:
    doc = bundle()
    report = evidence.verify(doc, TRUST)
    words = [f.words for f in report.findings if f.part.startswith("registration of")]
    assert len(words) == 2 and "(the root)" in words[0] and "administrator dana" in words[1], words
    alice, dana = key_id(public(ALICE)), key_id(public(DANA))
    d = copy.deepcopy(doc)
    k = d["parts"]["approvals"][0]["key"]
    sig = k["registration_signature"]
    k["registration_signature"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    assert evidence.verify(signed(d), TRUST).failed_parts() == [f"registration of {alice}", "quorum"]
    d = copy.deepcopy(doc)
    d["parts"]["approvals"][0]["key"]["registrar"]["registration"]["role"] = "approver"
    assert evidence.verify(signed(d), TRUST).failed_parts() == [
        f"registration of {dana}",
        f"registration of {alice}",
        "quorum",
    ]
    d = copy.deepcopy(doc)
    d["parts"]["approvals"][0]["key"].update(registration_legacy=True, registration=None)
    report = evidence.verify(signed(d), TRUST)
    assert report.ok(), report.findings
    assert any(f.words.startswith("NOT signed: registered before") for f in report.findings)
    assert any(alice in p for p in report.proves)
    # A bundle made before bundles carried registrations still verifies, saying so.
    d = copy.deepcopy(doc)
    k = d["parts"]["approvals"][0]["key"]
    for member in ("registration_legacy", "registration", "registration_signature", "registrar"):
        del k[member]
    k["registration_signed"] = False
    report = evidence.verify(signed(d), TRUST)
    assert report.ok(), report.findings


def mandated(used_at: str) -> dict[str, Any]:
    """A payment approved by alice's mandate, used at `used_at`."""
    doc = bundle()
    fingerprint = "sha256:" + "ab" * 32
    statement: dict[str, Any] = {
        "statement": "fleet.mandate.v1",
        "mandate_id": "md_01JF0000000000000000000000",
        "tenant_id": "org_1",
        "actions": ["payment.create"],
        "payees": [{"id": "vendor_77", "account_fingerprint": fingerprint}],
        "currency": "EUR",
        "per_operation_max_minor": 150000,
        "budget_minor": 1000000,
        "count_limit": 10,
        "valid_from": "2026-02-15T00:00:00Z",
        "valid_until": "2026-04-01T00:00:00Z",
        "for_principal": None,
    }
    parts = doc["parts"]
    parts["operation"]["decided_by"] = "mandate:md_01JF0000000000000000000000"
    parts["payee"] = {
        "status": "found",
        "id": "vendor_77",
        "account": {"scheme": "iban", "masked": "DE** 1234", "fingerprint": fingerprint},
        "verified": True,
    }
    parts["approvals"] = []
    parts["mandates"] = [
        {
            "mandate_id": "md_01JF0000000000000000000000",
            "amount_minor": 125000,
            "at": used_at,
            "statement": statement,
            "signed_by": "alice",
            "key_id": key_id(public(ALICE)),
            "signature": b64(ALICE.sign(rfc8785.dumps(statement))),
            "stored_at": "2026-02-20T00:00:00.000000Z",
            "key": alices_key(),
        }
    ]
    return signed(doc)


def test_a_mandates_signature_key_and_terms_are_checked() -> None:
    doc = mandated(AT)
    report = evidence.verify(doc, TRUST)
    assert report.ok(), report.findings
    assert any("Mandate md_01JF" in p for p in report.proves)
    md = "md_01JF0000000000000000000000"
    d = copy.deepcopy(doc)
    sig = d["parts"]["mandates"][0]["signature"]
    d["parts"]["mandates"][0]["signature"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    assert evidence.verify(signed(d), TRUST).failed_parts() == [f"mandate {md}", "quorum"]
    d = copy.deepcopy(doc)
    d["parts"]["mandates"][0]["statement"]["per_operation_max_minor"] = 100000
    assert evidence.verify(signed(d), TRUST).failed_parts() == [f"mandate {md}", f"terms of mandate {md}", "quorum"]
    late = mandated("2026-05-01T00:00:00.000000Z")
    assert evidence.verify(late, TRUST).failed_parts() == [f"terms of mandate {md}", "quorum"]


def test_a_passkeys_assertion_verifies_over_the_statements_hash_only() -> None:
    """WebAuthn ES256: the signature is over authenticator data and the SHA-256 of the client
    data, whose challenge is the SHA-256 of the statement; stored as two length-prefixed
    parts and the DER signature."""
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    passkey = evidence.Key("es256", point, "fleet.example", "https://fleet.example")
    statement = b'{"statement":"fleet.approval.v4"}'

    def stored(message: bytes, flags: int = 0x05, origin: str = "https://fleet.example") -> bytes:
        challenge = b64(hashlib.sha256(message).digest())
        client = ('{"type":"webauthn.get","challenge":"%s","origin":"%s"}' % (challenge, origin)).encode()
        data = hashlib.sha256(b"fleet.example").digest() + bytes([flags]) + b"\0\0\0\1"
        der = key.sign(data + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        return len(data).to_bytes(2, "big") + data + len(client).to_bytes(2, "big") + client + der

    assert passkey.verifies(statement, stored(statement))
    assert not passkey.verifies(statement + b" ", stored(statement))
    assert not passkey.verifies(statement, stored(statement, flags=0x01))
    assert not passkey.verifies(statement, stored(statement, origin="https://evil.example"))
