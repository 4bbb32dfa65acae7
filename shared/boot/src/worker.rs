//! Which worker a binary is: the component its store is held as, the name its logs and
//! metrics carry, and where its admin server listens unless told (several run on one
//! host, so each has its own port).

use std::net::SocketAddr;

use fleet_runtime::admin_addrs;
use fleet_store::component::{self, Component};

/// A worker binary's component, with its name and default admin address.
pub trait Worker: Component {
    const NAME: &'static str;
    const ADMIN_ADDR: SocketAddr;
}

macro_rules! workers {
    ($($component:ident = $name:literal at $addr:ident;)+) => {
        $(
            impl Worker for component::$component {
                const NAME: &'static str = $name;
                const ADMIN_ADDR: SocketAddr = admin_addrs::$addr;
            }
        )+
    };
}

workers! {
    Prepare = "prepare" at PREPARE;
    Execute = "execute" at EXECUTE;
    Reconcile = "reconcile" at RECONCILE;
    WebhookIngest = "webhook-ingest" at WEBHOOK_INGEST;
    Api = "api" at API;
    Relay = "relay" at RELAY;
}
