//! Least-privilege broker users for one test: created by the real `fleetctl broker setup`
//! code (management API) with names prefixed by the test's namespace, so tests running at
//! once never share a user, and removed again by [`BrokerUsers::remove`].

use fleet_broker::permissions::Role;
use fleet_broker::{BrokerConfig, TopologyMode};
use fleet_runtime::Secret;
use fleetctl::broker_setup::{self, BrokerUser, ManagementApi};

use crate::TestFleet;

fn management_url() -> String {
    std::env::var("RABBITMQ_MANAGEMENT_URL").unwrap_or_else(|_| "http://127.0.0.1:15672".into())
}

/// The users of one test fleet, one per role.
pub struct BrokerUsers {
    admin: BrokerConfig,
    users: Vec<BrokerUser>,
}

impl BrokerUsers {
    /// `role`'s AMQP URL (its own user and password, the fleet's broker and vhost).
    pub fn amqp_url(&self, role: Role) -> String {
        let user = self
            .users
            .iter()
            .find(|u| u.role == role)
            .expect("every role has a user");
        let (_, rest) = self
            .admin
            .amqp_url
            .rsplit_once('@')
            .expect("the admin URL has credentials");
        format!("amqp://{}:{}@{rest}", user.name, user.password.expose())
    }

    /// `role`'s broker settings: its own user, the fleet's namespace, verify-only topology.
    pub fn config(&self, role: Role) -> BrokerConfig {
        let mut cfg = self.admin.clone().with_topology(TopologyMode::Verify);
        cfg.amqp_url = self.amqp_url(role);
        cfg
    }

    /// The environment a worker process of `role` runs with.
    pub fn env(&self, role: Role) -> Vec<(&'static str, String)> {
        vec![
            ("AMQP_URL", self.amqp_url(role)),
            ("AMQP_TOPOLOGY", "verify".to_owned()),
        ]
    }

    pub async fn remove(self) {
        let api = ManagementApi::new(&self.admin, &management_url()).expect("management API");
        for user in &self.users {
            api.delete_user(&user.name)
                .await
                .expect("delete a test user");
        }
    }
}

impl TestFleet {
    /// Runs `fleetctl broker setup` for this fleet's namespace, as the admin user the
    /// fleet connects with.
    pub async fn create_broker_users(&self) -> BrokerUsers {
        let users: Vec<BrokerUser> = Role::ALL
            .into_iter()
            .map(|role| BrokerUser {
                role,
                name: format!("{}-{}", self.broker.namespace, role.name()),
                password: Secret::new(ulid::Ulid::new().to_string()),
            })
            .collect();
        broker_setup::setup(&self.broker, &management_url(), &users)
            .await
            .expect("fleetctl broker setup");
        BrokerUsers {
            admin: self.broker.clone(),
            users,
        }
    }
}
