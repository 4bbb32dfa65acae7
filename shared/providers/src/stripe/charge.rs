//! `charge.create` spoken as Stripe: the `POST /v1/payment_intents` request and the reads
//! of customers, payment methods and PaymentIntents.
