//! Quorum policies: how many distinct approvers an operation needs before it may run. Each
//! policy version is a TOML file (`shared/policies/<policy_version>.toml`) that says, per
//! action and per amount band in each currency, how many approvers are required:
//!
//! ```toml
//! policy_version = "payments-v3"
//!
//! [actions."payment.create"]
//! approvers = 1                    # below every band
//!
//! [[actions."payment.create".bands]]
//! currency = "KZT"
//! from_amount_minor = 100000000    # 1,000,000.00 KZT and above
//! approvers = 2
//! ```
//!
//! Which policy governs an intent is the deployment's decision, never the agent's: for
//! each action one policy is in force by default (`in-force.toml` beside the policies, or
//! the one policy that names the action), and an administrator may assign another per
//! tenant (kept in the database, where no component may write). An intent's
//! `policy_version` only confirms the policy in force; another is refused
//! (`policy_not_in_force`).
//!
//! Bands are per currency: an action with bands accepts only the currencies it has bands
//! for (another is refused `currency_not_banded`, never given the lowest quorum); an
//! action without bands needs the same quorum whatever the amount.
//!
//! An operation's amount falls in the band of its currency with the highest
//! `from_amount_minor` at or below it; no such band means the action's `approvers`. An
//! action the policy does not name is not allowed under it. A larger amount never needs
//! fewer approvers (a file that says otherwise is refused). Pure: the text is an input;
//! reading the directory is the caller's.
//!
//! `signed_approvals` (on the action, or on a band; 0 when absent, and a band without it
//! takes the action's) says how many of those approvals must carry the approver's own
//! signature (`signed_quorum`): at most `approvers`, and never fewer for a larger amount.
//!
//! `unknown_payee` (on the action) says what happens to an intent whose payee the
//! provider's directory cannot confirm at intake (not found, or no answer after a bounded
//! retry): `"refuse"` (the default: dead-lettered `payee_unknown`, an HTTP 422) or
//! `"approve"`, with `unknown_payee_approvers` distinct approvers at least (the amount's
//! quorum when that is larger).
//!
//! `foreign_object` (on an action whose intents name a provider's object: `refund.create`,
//! `crm.deal.update`, `order.status.change`; see `crate::objects`) says the same of an
//! object the fleet has no record of (made outside the fleet): `"refuse"` (the default:
//! dead-lettered `object_unknown`, an HTTP 422) or `"approve"`, with
//! `foreign_object_approvers` distinct approvers at least. An object the fleet recorded
//! for another tenant is refused whatever the policy says.
//!
//! `[actions."payment.create".risk]` (and `[actions."charge.create".risk]`, for a charge's
//! cues: `crate::risk::charge`) says what a payment flagged by a risk cue
//! (`crate::risk`) needs besides its amount's quorum: `extra_approvers` more distinct
//! approvers (default 0), at least `signed_approvals` signed ones (default 0), and the
//! multiple of the payee's median above which an amount is flagged (`median_multiple`,
//! default 3). Without the table, cues are shown and change nothing.
//!
//! `[actions."payment.create".name_check]` says what a payment needs by the result of its
//! payee name check (`crate::payee::name_check`): one more approver, or a refusal, per
//! result ([`NameCheckRule`]). Without the table, the result is shown and changes nothing.
//!
//! `mandates` (on an action with an amount and a payee) says what a standing mandate
//! (`crate::mandate`) may approve instead of a person: `"never"` (the default) or
//! `"below_bands"`: an operation needing one approver, with an amount below every band of
//! its currency and no risk cue. The database applies it at claim
//! (`fleet_mandate_may_approve`, migrations/0061_mandates.sql).

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::Value;

use crate::currency::is_iso_4217;
use crate::intent::{Action, MAX_SAFE_INTEGER};

mod name_check;

pub use name_check::{NameCheckRule, NameStep};

/// The most approvers a policy may require: a quorum nobody can gather is a mistake.
pub const MAX_APPROVERS: u8 = 10;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    policy_version: String,
    actions: BTreeMap<String, ActionFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionFile {
    approvers: u8,
    #[serde(default)]
    signed_approvals: u8,
    #[serde(default)]
    bands: Vec<BandFile>,
    unknown_payee: Option<String>,
    unknown_payee_approvers: Option<u8>,
    foreign_object: Option<String>,
    foreign_object_approvers: Option<u8>,
    risk: Option<RiskRule>,
    mandates: Option<String>,
    name_check: Option<NameCheckRule>,
}

/// What a payment flagged by a risk cue needs besides its amount's quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RiskRule {
    /// More distinct approvers than the amount needs.
    #[serde(default)]
    pub extra_approvers: u8,
    /// At least this many of the approvals signed.
    #[serde(default)]
    pub signed_approvals: u8,
    /// An amount above this multiple of the payee's median is flagged.
    #[serde(default = "default_median_multiple")]
    pub median_multiple: u32,
}

fn default_median_multiple() -> u32 {
    crate::risk::DEFAULT_MEDIAN_MULTIPLE
}

impl Default for RiskRule {
    fn default() -> RiskRule {
        RiskRule {
            extra_approvers: 0,
            signed_approvals: 0,
            median_multiple: default_median_multiple(),
        }
    }
}

impl RiskRule {
    /// (approvers, signed approvals) a payment with `cues` needs, given what its amount
    /// needs: unchanged when nothing is flagged.
    pub fn requirement(self, flagged: bool, approvers: u8, signed: u8) -> (u8, u8) {
        if !flagged {
            return (approvers, signed);
        }
        let approvers = approvers
            .saturating_add(self.extra_approvers)
            .min(MAX_APPROVERS)
            .max(self.signed_approvals);
        (approvers, signed.max(self.signed_approvals).min(approvers))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BandFile {
    currency: String,
    from_amount_minor: i64,
    approvers: u8,
    signed_approvals: Option<u8>,
}

/// A policy file that cannot be used; the message names the file and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy {source_name}: {problem}")]
pub struct PolicyError {
    pub source_name: String,
    pub problem: String,
}

/// Why an intent cannot be judged by the policies in force; it is refused at intake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyRefusal {
    /// No policy file for the intent's `policy_version`, or no policy in force for its
    /// tenant and action.
    UnknownPolicy,
    /// The policy exists but does not name the intent's action.
    ActionNotInPolicy,
    /// The intent names a policy other than the one in force for its tenant and action:
    /// the deployment decides which policy governs, the agent may only confirm it.
    NotInForce,
    /// The policy bands the action's amounts by currency and has no band for the intent's
    /// currency: it was never decided how many approvers such an amount needs.
    CurrencyNotBanded,
}

impl PolicyRefusal {
    /// The dead-letter reason.
    pub fn reason(self) -> &'static str {
        use crate::refusal::IntakeRefusal;
        match self {
            PolicyRefusal::UnknownPolicy | PolicyRefusal::ActionNotInPolicy => {
                IntakeRefusal::UnknownPolicy.as_str()
            }
            PolicyRefusal::NotInForce => IntakeRefusal::PolicyNotInForce.as_str(),
            PolicyRefusal::CurrencyNotBanded => IntakeRefusal::CurrencyNotBanded.as_str(),
        }
    }

    /// The member of the intent the refusal is about.
    pub fn field(self) -> &'static str {
        match self {
            PolicyRefusal::UnknownPolicy | PolicyRefusal::NotInForce => "policy_version",
            PolicyRefusal::ActionNotInPolicy => "action",
            PolicyRefusal::CurrencyNotBanded => "payload.currency",
        }
    }
}

/// What an operation needs before it may run: distinct approvers, and how many of their
/// approvals must be signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Requirement {
    pub approvers: u8,
    pub signed: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Band {
    from_amount_minor: i64,
    approvers: u8,
    signed: u8,
}

/// What a policy does with an intent that names what the fleet cannot confirm: a payee
/// the provider's directory does not know, an object the fleet has no record of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnconfirmedRule {
    /// Refused at intake (`payee_unknown`, `object_unknown`).
    Refuse,
    /// Accepted, needing at least this many distinct approvers.
    Approvers(u8),
}

/// What a policy does with an intent whose payee is unknown.
pub type UnknownPayeeRule = UnconfirmedRule;

/// What a policy does with an intent naming an object the fleet has no record of.
pub type ForeignObjectRule = UnconfirmedRule;

impl UnconfirmedRule {
    /// The approvers such an intent needs, given what its amount needs; `None`: refused.
    pub fn approvers(self, for_amount: u8) -> Option<u8> {
        match self {
            UnconfirmedRule::Refuse => None,
            UnconfirmedRule::Approvers(n) => Some(n.max(for_amount)),
        }
    }

    /// Reads `<setting>` and `<setting>_approvers` of one action (`name`): absent or
    /// `"refuse"` without approvers, or `"approve"` with 1 to [`MAX_APPROVERS`].
    fn parse(
        name: &str,
        setting: &str,
        rule: Option<&str>,
        approvers: Option<u8>,
    ) -> Result<Self, String> {
        match (rule, approvers) {
            (None | Some("refuse"), None) => Ok(UnconfirmedRule::Refuse),
            (Some("approve"), Some(n)) if (1..=MAX_APPROVERS).contains(&n) => {
                Ok(UnconfirmedRule::Approvers(n))
            }
            (Some("approve"), _) => Err(format!(
                "{name}: {setting} = \"approve\" needs {setting}_approvers, 1 to {MAX_APPROVERS}"
            )),
            (None | Some("refuse"), Some(_)) => Err(format!(
                "{name}: {setting}_approvers goes with {setting} = \"approve\""
            )),
            (Some(other), _) => Err(format!(
                "{name}: {setting} is \"refuse\" or \"approve\", not {other:?}"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ActionQuorum {
    approvers: u8,
    signed: u8,
    unknown_payee: UnknownPayeeRule,
    foreign_object: ForeignObjectRule,
    risk: RiskRule,
    /// What the payee name check's result asks (payments only).
    name_check: NameCheckRule,
    /// Whether a standing mandate may approve an operation (`crate::mandate`).
    mandates: MandateRule,
    /// Per currency, sorted by `from_amount_minor`.
    bands: BTreeMap<String, Vec<Band>>,
}

/// What a policy lets a standing mandate approve ([`crate::mandate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MandateRule {
    /// Nothing: every operation waits for its approvers (the default).
    #[default]
    Never,
    /// An operation needing one approver, whose amount is below every band of its
    /// currency and which carries no risk cue.
    BelowBands,
}

impl MandateRule {
    fn parse(name: &str, text: Option<&str>) -> Result<MandateRule, String> {
        match text {
            None | Some("never") => Ok(MandateRule::Never),
            Some("below_bands") => Ok(MandateRule::BelowBands),
            Some(other) => Err(format!(
                "{name}: mandates is \"never\" or \"below_bands\", not {other:?}"
            )),
        }
    }
}

impl ActionQuorum {
    /// The amount's requirement, before risk cues: its band's, or the action's when no
    /// band applies. A policy with bands has decided per currency, so a currency it has
    /// no band for is refused rather than given the action's lowest quorum.
    fn amount_requirement(&self, payload: &Value) -> Result<Requirement, PolicyRefusal> {
        let below_bands = Requirement {
            approvers: self.approvers,
            signed: self.signed,
        };
        if self.bands.is_empty() {
            return Ok(below_bands);
        }
        let amount = payload.get("amount_minor").and_then(Value::as_i64);
        let currency = payload.get("currency").and_then(Value::as_str);
        let (Some(amount), Some(currency)) = (amount, currency) else {
            return Ok(below_bands);
        };
        let bands = self
            .bands
            .get(currency)
            .ok_or(PolicyRefusal::CurrencyNotBanded)?;
        Ok(bands
            .iter()
            .rev()
            .find(|b| b.from_amount_minor <= amount)
            .map_or(below_bands, |b| Requirement {
                approvers: b.approvers,
                signed: b.signed,
            }))
    }

    /// The rules as the database keeps them (`policies.rules`), for the insert trigger
    /// that derives the same floor from the snapshot.
    fn rules(&self) -> Value {
        let bands: serde_json::Map<String, Value> = self
            .bands
            .iter()
            .map(|(currency, list)| {
                let list: Vec<Value> = list
                    .iter()
                    .map(|b| {
                        serde_json::json!({
                            "from_amount_minor": b.from_amount_minor,
                            "approvers": b.approvers,
                            "signed": b.signed,
                        })
                    })
                    .collect();
                (currency.clone(), Value::Array(list))
            })
            .collect();
        let mut rules = serde_json::json!({
            "approvers": self.approvers,
            "signed": self.signed,
            "bands": bands,
            "risk": {
                "extra_approvers": self.risk.extra_approvers,
                "signed_approvals": self.risk.signed_approvals,
            },
        });
        // Written only where a policy allows mandates, so the rules of every policy that
        // does not stay as they were stored.
        if self.mandates == MandateRule::BelowBands {
            rules["mandates"] = Value::from("below_bands");
        }
        // Likewise only where a policy has a name_check table (the insert trigger of
        // migrations/0070_payee_name_check.sql reads it).
        if self.name_check != NameCheckRule::default() {
            rules["name_check"] = self.name_check.rules();
        }
        rules
    }
}

/// One policy version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    version: String,
    actions: HashMap<Action, ActionQuorum>,
    /// The file's text, kept with the rules in the database for whoever audits them.
    text: String,
}

impl Policy {
    /// Parses and checks one policy file; `source_name` is the file's stem, which must be
    /// the version the file declares (so the file an intent's version names is the one
    /// that applies).
    pub fn parse(source_name: &str, text: &str) -> Result<Policy, PolicyError> {
        let fail = |problem: String| PolicyError {
            source_name: source_name.to_owned(),
            problem,
        };
        let file: PolicyFile = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        if file.policy_version != source_name {
            return Err(fail(format!(
                "declares policy_version {:?}; the file must be named after its version",
                file.policy_version
            )));
        }
        if file.actions.is_empty() {
            return Err(fail("names no action".to_owned()));
        }
        let approvers_ok = |n: u8| (1..=MAX_APPROVERS).contains(&n);
        let mut actions = HashMap::new();
        for (name, rule) in file.actions {
            let action =
                Action::parse(&name).ok_or_else(|| fail(format!("unknown action {name:?}")))?;
            if !approvers_ok(rule.approvers) {
                return Err(fail(format!(
                    "{name}: approvers must be 1 to {MAX_APPROVERS}"
                )));
            }
            if rule.signed_approvals > rule.approvers {
                return Err(fail(format!(
                    "{name}: signed_approvals may not exceed approvers"
                )));
            }
            let unconfirmed = |what: &str, text: Option<&str>, approvers| {
                UnconfirmedRule::parse(&name, what, text, approvers).map_err(fail)
            };
            let unknown_payee = unconfirmed(
                "unknown_payee",
                rule.unknown_payee.as_deref(),
                rule.unknown_payee_approvers,
            )?;
            let foreign_object = unconfirmed(
                "foreign_object",
                rule.foreign_object.as_deref(),
                rule.foreign_object_approvers,
            )?;
            if rule.foreign_object.is_some() && action.spec().objects.is_empty() {
                return Err(fail(format!(
                    "{name}: names no provider object, so it has no foreign_object"
                )));
            }
            if rule.unknown_payee.is_some() && action.spec().payee.is_none() {
                return Err(fail(format!(
                    "{name}: names no payee, so it has no unknown_payee"
                )));
            }
            if rule.risk.is_some()
                && !matches!(action, Action::PaymentCreate | Action::ChargeCreate)
            {
                return Err(fail(format!(
                    "{name}: risk cues judge payments and charges, so only payment.create and charge.create have a risk table"
                )));
            }
            if let Some(risk) = rule.risk {
                if risk.extra_approvers > MAX_APPROVERS
                    || risk.signed_approvals > MAX_APPROVERS
                    || risk.median_multiple < 1
                {
                    return Err(fail(format!(
                        "{name}: risk's extra_approvers and signed_approvals are 0 to {MAX_APPROVERS}, its median_multiple at least 1"
                    )));
                }
            }
            if rule.name_check.is_some() && action != Action::PaymentCreate {
                return Err(fail(format!(
                    "{name}: only payment.create names a payee whose name is checked, so only it has a name_check table"
                )));
            }
            let mandates = MandateRule::parse(&name, rule.mandates.as_deref()).map_err(fail)?;
            if mandates == MandateRule::BelowBands
                && (rule.approvers != 1 || !crate::mandate::may_be_mandated(action))
            {
                return Err(fail(format!(
                    "{name}: a mandate stands in for one approver of an amount to a payee, so mandates = \"below_bands\" needs approvers = 1 and an action with both"
                )));
            }
            if !rule.bands.is_empty() && !action.spec().has_amount {
                return Err(fail(format!("{name}: has no amount, so it has no bands")));
            }
            let mut bands: BTreeMap<String, Vec<Band>> = BTreeMap::new();
            for band in rule.bands {
                if !is_iso_4217(&band.currency) {
                    return Err(fail(format!(
                        "{name}: {:?} is not an ISO 4217 currency",
                        band.currency
                    )));
                }
                if !(1..=MAX_SAFE_INTEGER).contains(&band.from_amount_minor) {
                    return Err(fail(format!(
                        "{name}: from_amount_minor must be 1 to {MAX_SAFE_INTEGER}"
                    )));
                }
                if !approvers_ok(band.approvers) {
                    return Err(fail(format!(
                        "{name}: approvers must be 1 to {MAX_APPROVERS}"
                    )));
                }
                let signed = band.signed_approvals.unwrap_or(rule.signed_approvals);
                if signed > band.approvers {
                    return Err(fail(format!(
                        "{name}: signed_approvals may not exceed approvers"
                    )));
                }
                bands.entry(band.currency).or_default().push(Band {
                    from_amount_minor: band.from_amount_minor,
                    approvers: band.approvers,
                    signed,
                });
            }
            for (currency, list) in &mut bands {
                list.sort_by_key(|b| b.from_amount_minor);
                if list
                    .windows(2)
                    .any(|w| w[0].from_amount_minor == w[1].from_amount_minor)
                {
                    return Err(fail(format!(
                        "{name}: two {currency} bands start at the same amount"
                    )));
                }
                let (mut floor, mut signed_floor) = (rule.approvers, rule.signed_approvals);
                for b in list.iter() {
                    if b.approvers < floor {
                        return Err(fail(format!(
                            "{name}: the {currency} band from {} needs fewer approvers than a smaller amount",
                            b.from_amount_minor
                        )));
                    }
                    if b.signed < signed_floor {
                        return Err(fail(format!(
                            "{name}: the {currency} band from {} needs fewer signed approvals than a smaller amount",
                            b.from_amount_minor
                        )));
                    }
                    (floor, signed_floor) = (b.approvers, b.signed);
                }
            }
            actions.insert(
                action,
                ActionQuorum {
                    approvers: rule.approvers,
                    signed: rule.signed_approvals,
                    unknown_payee,
                    foreign_object,
                    risk: rule.risk.unwrap_or_default(),
                    name_check: rule.name_check.unwrap_or_default(),
                    mandates,
                    bands,
                },
            );
        }
        Ok(Policy {
            version: file.policy_version,
            actions,
            text: text.to_owned(),
        })
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    /// The file's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The actions the policy names.
    pub fn actions(&self) -> impl Iterator<Item = Action> + '_ {
        self.actions.keys().copied()
    }

    fn quorum(&self, action: Action) -> Result<&ActionQuorum, PolicyRefusal> {
        self.actions
            .get(&action)
            .ok_or(PolicyRefusal::ActionNotInPolicy)
    }

    /// How many distinct approvers `action` with this payload needs, and how many of
    /// those approvals must be signed by their approvers, if the policy allows the action
    /// at all (the amount's requirement, before any risk cue).
    pub fn amount_requirement(
        &self,
        action: Action,
        payload: &Value,
    ) -> Result<Requirement, PolicyRefusal> {
        self.quorum(action)?.amount_requirement(payload)
    }

    /// The least an operation of `action` with `payload` needs under this policy: its
    /// amount's requirement, raised as the risk table says when a cue flags it. Intake
    /// may ask more (an unknown payee, an object made elsewhere), never less; the
    /// database derives the same floor from the same rules (`policies.rules`), and a
    /// table test holds the two together.
    pub fn floor(
        &self,
        action: Action,
        payload: &Value,
        flagged: bool,
    ) -> Result<Requirement, PolicyRefusal> {
        let quorum = self.quorum(action)?;
        let amount = quorum.amount_requirement(payload)?;
        let (approvers, signed) = quorum
            .risk
            .requirement(flagged, amount.approvers, amount.signed);
        Ok(Requirement { approvers, signed })
    }

    /// The rules as the database keeps them: `{"<action>": {"approvers", "signed",
    /// "bands": {"<currency>": [{"from_amount_minor", "approvers", "signed"}]},
    /// "risk": {"extra_approvers", "signed_approvals"}}}`.
    pub fn rules(&self) -> Value {
        let mut actions: Vec<(&Action, &ActionQuorum)> = self.actions.iter().collect();
        actions.sort_by_key(|(a, _)| a.wire_name());
        Value::Object(
            actions
                .into_iter()
                .map(|(a, q)| (a.wire_name().to_owned(), q.rules()))
                .collect(),
        )
    }

    /// What `action` needs when a risk cue flags it.
    pub fn risk(&self, action: Action) -> Option<RiskRule> {
        self.actions.get(&action).map(|q| q.risk)
    }

    /// What a standing mandate may approve of `action` under this policy.
    pub fn mandates(&self, action: Action) -> MandateRule {
        self.actions
            .get(&action)
            .map_or(MandateRule::Never, |q| q.mandates)
    }

    /// What `action` does with an unknown payee under this policy.
    pub fn unknown_payee(&self, action: Action) -> Option<UnknownPayeeRule> {
        self.actions.get(&action).map(|q| q.unknown_payee)
    }

    /// What `action` does with an object the fleet has no record of, under this policy.
    pub fn foreign_object(&self, action: Action) -> Option<ForeignObjectRule> {
        self.actions.get(&action).map(|q| q.foreign_object)
    }

    /// What `action` asks by the result of its payee name check, under this policy.
    pub fn name_check(&self, action: Action) -> Option<NameCheckRule> {
        self.actions.get(&action).map(|q| q.name_check)
    }
}

/// The name of the file, beside the policies, that says which policy is in force for
/// each action when a tenant has no assignment of its own (`in-force.toml`).
pub const IN_FORCE_FILE: &str = "in-force";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InForceFile {
    in_force: BTreeMap<String, String>,
}

/// Every policy the deployment has, by version, and which of them is in force for each
/// action by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySet {
    policies: BTreeMap<String, Policy>,
    /// What `in-force.toml` says, checked against the policies.
    in_force: BTreeMap<Action, String>,
}

impl PolicySet {
    /// The policies of these files: (file stem, text) each. The file named
    /// [`IN_FORCE_FILE`], if any, says which policy is in force by default for an action
    /// that several policies name.
    pub fn parse<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PolicySet, PolicyError> {
        let mut policies = BTreeMap::new();
        let mut in_force_text = None;
        for (name, text) in files {
            if name == IN_FORCE_FILE {
                in_force_text = Some(text);
                continue;
            }
            let policy = Policy::parse(name, text)?;
            policies.insert(policy.version.clone(), policy);
        }
        let mut set = PolicySet {
            policies,
            in_force: BTreeMap::new(),
        };
        if let Some(text) = in_force_text {
            set.in_force = set.parse_in_force(text)?;
        }
        Ok(set)
    }

    fn parse_in_force(&self, text: &str) -> Result<BTreeMap<Action, String>, PolicyError> {
        let fail = |problem: String| PolicyError {
            source_name: IN_FORCE_FILE.to_owned(),
            problem,
        };
        let file: InForceFile = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        let mut in_force = BTreeMap::new();
        for (name, version) in file.in_force {
            let action =
                Action::parse(&name).ok_or_else(|| fail(format!("unknown action {name:?}")))?;
            match self.policies.get(&version) {
                None => return Err(fail(format!("{name}: no policy {version:?}"))),
                Some(p) if !p.actions.contains_key(&action) => {
                    return Err(fail(format!("{name}: policy {version:?} does not name it")))
                }
                Some(_) => {}
            }
            in_force.insert(action, version);
        }
        Ok(in_force)
    }

    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.policies.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// The policy of this version.
    pub fn policy(&self, version: &str) -> Option<&Policy> {
        self.policies.get(version)
    }

    /// Every policy, by version.
    pub fn policies(&self) -> impl Iterator<Item = &Policy> {
        self.policies.values()
    }

    /// The policy in force for `action` when a tenant has none assigned: what
    /// `in-force.toml` says, else the one policy that names the action. `None` when
    /// several name it and the file says nothing: an administrator must choose.
    pub fn default_in_force(&self, action: Action) -> Option<&str> {
        if let Some(v) = self.in_force.get(&action) {
            return Some(v);
        }
        let mut naming = self
            .policies
            .values()
            .filter(|p| p.actions.contains_key(&action));
        match (naming.next(), naming.next()) {
            (Some(only), None) => Some(only.version()),
            _ => None,
        }
    }

    /// How many distinct approvers an intent needs under the policy it names, and how
    /// many of their approvals must be signed.
    pub fn amount_requirement(
        &self,
        policy_version: &str,
        action: Action,
        payload: &Value,
    ) -> Result<Requirement, PolicyRefusal> {
        self.named(policy_version)?
            .amount_requirement(action, payload)
    }

    fn named(&self, policy_version: &str) -> Result<&Policy, PolicyRefusal> {
        self.policies
            .get(policy_version)
            .ok_or(PolicyRefusal::UnknownPolicy)
    }

    /// What the policy an intent names says through `rule`: none is `ActionNotInPolicy`.
    fn rule_of<T>(
        &self,
        policy_version: &str,
        rule: impl FnOnce(&Policy) -> Option<T>,
    ) -> Result<T, PolicyRefusal> {
        rule(self.named(policy_version)?).ok_or(PolicyRefusal::ActionNotInPolicy)
    }
}

impl PolicySet {
    /// What the policy an intent names asks of a flagged payment (the default rule, which
    /// changes nothing, when it names neither).
    pub fn risk(&self, policy_version: &str, action: Action) -> RiskRule {
        self.policies
            .get(policy_version)
            .and_then(|p| p.risk(action))
            .unwrap_or_default()
    }

    /// What the policy an intent names asks by its payee name check's result (the default
    /// rule, which changes nothing, when it names neither).
    pub fn name_check(&self, policy_version: &str, action: Action) -> NameCheckRule {
        self.policies
            .get(policy_version)
            .and_then(|p| p.name_check(action))
            .unwrap_or_default()
    }

    /// What the policy an intent names does with its payee, when unknown.
    pub fn unknown_payee(
        &self,
        policy_version: &str,
        action: Action,
    ) -> Result<UnknownPayeeRule, PolicyRefusal> {
        self.rule_of(policy_version, |p| p.unknown_payee(action))
    }

    /// What the policy an intent names does with an object the fleet has no record of.
    pub fn foreign_object(
        &self,
        policy_version: &str,
        action: Action,
    ) -> Result<ForeignObjectRule, PolicyRefusal> {
        self.rule_of(policy_version, |p| p.foreign_object(action))
    }
}

/// Progress towards a quorum: `received` distinct approvals of `required`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quorum {
    pub received: i64,
    pub required: i64,
}

impl Quorum {
    pub fn is_met(self) -> bool {
        self.received >= self.required
    }
}

impl std::fmt::Display for Quorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {}", self.received, self.required)
    }
}

#[cfg(test)]
mod tests;
