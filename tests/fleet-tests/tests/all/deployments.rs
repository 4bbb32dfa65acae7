//! Two deployments on one Postgres server never share database roles, and `fleetctl
//! migrate` never hands one deployment's roles, grants or passwords to another: run as
//! operators run it, against databases whose names differ only by punctuation (which
//! once gave both the same roles).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::process::Output;

use fleet_store::{DbRole, RolePrefix};
use fleet_tests::bin_dir;

const PERMISSION_DENIED: &str = "42501";

fn server() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// Databases (and roles made by hand) a test creates, removed when it ends however it
/// ends: each database with the deployment roles marked as its own, then the other roles.
struct Scratch {
    databases: Vec<String>,
    roles: Vec<String>,
}

impl Scratch {
    fn new(databases: &[&str]) -> Scratch {
        Scratch {
            databases: databases.iter().map(|d| d.to_string()).collect(),
            roles: Vec::new(),
        }
    }

    /// The URL of database `name` (escaped as a URL path must be), as the owner.
    fn url(name: &str) -> String {
        let mut url = url::Url::parse(&server()).unwrap();
        url.set_path(&format!("/{name}"));
        url.to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let (databases, roles) = (self.databases.clone(), self.roles.clone());
        // On a thread with a runtime of its own: the test's runtime may be unwinding.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                for name in &databases {
                    let _ = fleet_store::drop_database(&Scratch::url(name)).await;
                }
                let admin = owner_sql("postgres").await;
                for role in &roles {
                    let _ = admin
                        .batch_execute(&format!("DROP ROLE IF EXISTS \"{role}\""))
                        .await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

async fn connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// A connection to `database` as the server's administrator.
async fn owner_sql(database: &str) -> tokio_postgres::Client {
    connect(&Scratch::url(database)).await.unwrap()
}

/// `fleetctl migrate` of `database` with `env` (and nothing else of the test's settings).
async fn migrate(database: &str, env: &[(&str, &str)]) -> Output {
    tokio::process::Command::new(bin_dir().join("fleetctl"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", Scratch::url(database))
        .envs(env.iter().copied())
        .arg("migrate")
        .output()
        .await
        .expect("run fleetctl")
}

/// `fleetctl migrate` of `database`, which must succeed: what it printed.
async fn migrated(database: &str, env: &[(&str, &str)]) -> String {
    let out = migrate(database, env).await;
    assert!(
        out.status.success(),
        "fleetctl migrate of {database}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn logins(database: &str) -> Vec<(DbRole, String)> {
    let prefix = RolePrefix::of(&Scratch::url(database)).unwrap();
    DbRole::ALL
        .into_iter()
        .map(|r| (r, r.login_name(&prefix)))
        .collect()
}

/// `login` connecting to `database`: `Ok` or the SQLSTATE of the refusal.
async fn connects(login: &str, password: Option<&str>, database: &str) -> Result<(), String> {
    let mut url = url::Url::parse(&Scratch::url(database)).unwrap();
    url.set_username(login).unwrap();
    url.set_password(password).unwrap();
    match connect(url.as_str()).await {
        Ok(_) => Ok(()),
        Err(e) => Err(e.code().map_or_else(|| e.to_string(), |c| c.code().into())),
    }
}

/// The password verifier Postgres keeps for `login`.
async fn verifier(login: &str) -> Option<String> {
    owner_sql("postgres")
        .await
        .query_one(
            "SELECT rolpassword FROM pg_authid WHERE rolname = $1",
            &[&login],
        )
        .await
        .unwrap()
        .get(0)
}

/// Whether `password` is the one a SCRAM-SHA-256 `verifier` was made from: what the
/// server checks at login (RFC 5802: the stored key is H(HMAC(Hi(password, salt, i),
/// "Client Key"))). The test server trusts local connections, so a login with a wrong
/// password would succeed there: the verifier says which password a deployment has.
fn scram_verifies(verifier: &str, password: &str) -> bool {
    type HmacSha256 = Hmac<Sha256>;
    let hmac = |key: &[u8], data: &[u8]| {
        let mut m = HmacSha256::new_from_slice(key).unwrap();
        m.update(data);
        m.finalize().into_bytes().to_vec()
    };
    let Some(rest) = verifier.strip_prefix("SCRAM-SHA-256$") else {
        return false;
    };
    let (params, keys) = rest.split_once('$').unwrap();
    let (iterations, salt) = params.split_once(':').unwrap();
    let (stored_key, _) = keys.split_once(':').unwrap();
    let salt = STANDARD.decode(salt).unwrap();
    let mut u = hmac(
        password.as_bytes(),
        &[salt.as_slice(), &1u32.to_be_bytes()].concat(),
    );
    let mut salted = u.clone();
    for _ in 1..iterations.parse::<u32>().unwrap() {
        u = hmac(password.as_bytes(), &u);
        salted.iter_mut().zip(&u).for_each(|(s, x)| *s ^= x);
    }
    let client_key = hmac(&salted, b"Client Key");
    STANDARD.encode(Sha256::digest(&client_key)) == stored_key
}

/// The roles granted CONNECT on `database` by name (PUBLIC aside).
async fn granted_connect(database: &str) -> Vec<String> {
    fleet_tests::first_column(
        &owner_sql("postgres").await,
        "SELECT pg_get_userbyid(a.grantee)::text FROM pg_database d, aclexplode(d.datacl) a
         WHERE d.datname = $1 AND a.privilege_type = 'CONNECT' AND a.grantee <> 0",
        &[&database],
    )
    .await
}

fn unique() -> String {
    ulid::Ulid::new().to_string().to_lowercase()
}

#[tokio::test]
async fn deployments_whose_names_differ_by_punctuation_get_their_own_roles_and_passwords() {
    let u = unique();
    let (a, b) = (format!("fleet_t_{u}_x_y"), format!("fleet_t_{u}-x-y"));
    let _scratch = Scratch::new(&[&a, &b]);
    migrated(&a, &[("FLEET_DB_PASSWORD_API", "pw-a")]).await;
    let api_a = DbRole::Api.login_name(&RolePrefix::of(&Scratch::url(&a)).unwrap());
    let before = verifier(&api_a).await.expect("a's API password is set");
    assert!(scram_verifies(&before, "pw-a"));

    let printed = migrated(&b, &[("FLEET_DB_PASSWORD_API", "pw-b")]).await;
    let (roles_a, roles_b) = (logins(&a), logins(&b));
    // The operator is told the names b's components log in as.
    assert!(
        printed.contains(&format!(
            "set the password of the database role {}",
            roles_b[0].1
        )),
        "{printed}"
    );
    for ((role, login_a), (_, login_b)) in roles_a.iter().zip(&roles_b) {
        assert_ne!(login_a, login_b, "{role:?}");
        // Each logs in to its own database and is refused by the other.
        assert_eq!(connects(login_a, None, &a).await, Ok(()), "{login_a}");
        assert_eq!(connects(login_b, None, &b).await, Ok(()), "{login_b}");
        assert_eq!(
            connects(login_a, None, &b).await,
            Err(PERMISSION_DENIED.into()),
            "{login_a} in {b}"
        );
        assert_eq!(
            connects(login_b, None, &a).await,
            Err(PERMISSION_DENIED.into()),
            "{login_b} in {a}"
        );
    }
    // Migrating b left a's password as a set it; b has its own.
    let after = verifier(&api_a).await.unwrap();
    assert_eq!(after, before);
    assert!(scram_verifies(&after, "pw-a") && !scram_verifies(&after, "pw-b"));
    let api_b = &roles_b[0].1;
    assert!(scram_verifies(&verifier(api_b).await.unwrap(), "pw-b"));
    assert_eq!(
        connects(&api_a, Some("pw-a"), &a).await,
        Ok(()),
        "a's API role with a's password"
    );
    // Each database lets in its own six roles and nobody else by name.
    for (database, roles) in [(&a, &roles_a), (&b, &roles_b)] {
        let mut granted = granted_connect(database).await;
        granted.retain(|g| g != "postgres");
        granted.sort();
        let mut own: Vec<String> = roles.iter().map(|(_, l)| l.clone()).collect();
        own.sort();
        assert_eq!(granted, own, "{database}");
    }
    // Migrating again changes nothing of the other's.
    migrated(&a, &[]).await;
    assert_eq!(verifier(&api_a).await.unwrap(), before);
    assert!(scram_verifies(&verifier(api_b).await.unwrap(), "pw-b"));
}

#[tokio::test]
async fn migrate_refuses_a_role_that_belongs_to_another_database_and_changes_nothing() {
    let u = unique();
    let (a, b, c) = (
        format!("fleet_t_{u}_own"),
        format!("fleet_t_{u}_other"),
        format!("fleet_t_{u}_c"),
    );
    let mut scratch = Scratch::new(&[&a, &b, &c]);
    migrated(&a, &[("FLEET_DB_PASSWORD_API", "pw-a")]).await;
    let prefix_a = RolePrefix::of(&Scratch::url(&a)).unwrap();
    let api_a = DbRole::Api.login_name(&prefix_a);
    let before = verifier(&api_a).await.unwrap();

    // b named with a's roles (a deployment id reused by mistake, or on purpose).
    let out = migrate(
        &b,
        &[
            ("FLEET_DB_ROLE_PREFIX", prefix_a.as_str()),
            ("FLEET_DB_PASSWORD_API", "pw-mallory"),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "b migrated with a's roles");
    assert!(
        stderr.contains(&format!("belongs to the deployment of database \"{a}\"")),
        "{stderr}"
    );
    assert_eq!(
        verifier(&api_a).await.unwrap(),
        before,
        "a's password changed"
    );
    assert!(granted_connect(&b)
        .await
        .iter()
        .all(|g| !g.starts_with(prefix_a.as_str())));

    // A role of c's name made by hand, without the marker, that may connect to a.
    let intruder = DbRole::Api.login_name(&RolePrefix::of(&Scratch::url(&c)).unwrap());
    scratch.roles.push(intruder.clone());
    let admin = owner_sql("postgres").await;
    admin
        .batch_execute(&format!(
            "CREATE ROLE \"{intruder}\" LOGIN; GRANT CONNECT ON DATABASE \"{a}\" TO \"{intruder}\""
        ))
        .await
        .unwrap();
    let out = migrate(&c, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "c migrated with a role a lets in");
    assert!(
        stderr.contains(&format!(
            "{intruder} was not made for database \"{c}\" and may connect to database \"{a}\""
        )),
        "{stderr}"
    );
    // Nothing of c's was made: its other roles do not exist, the intruder joined no group.
    for (role, login) in logins(&c) {
        let (exists, member): (bool, bool) = {
            let row = admin
                .query_one(
                    "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1),
                            EXISTS (SELECT FROM pg_roles WHERE rolname = $1 AND pg_has_role(oid, $2, 'MEMBER'))",
                    &[&login, &role.name()],
                )
                .await
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert_eq!(exists, role == DbRole::Api, "{login} exists");
        assert!(!member, "{login} was granted {}", role.name());
    }
}
