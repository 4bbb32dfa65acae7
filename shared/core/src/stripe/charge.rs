//! `charge.create` spoken as Stripe: what the answer to `POST /v1/payment_intents` and a
//! PaymentIntent object prove (pure rules, no HTTP).
