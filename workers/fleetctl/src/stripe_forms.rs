//! The forms that seed a Stripe double (localstripe) as Stripe's own clients would, for
//! the demo's Stripe mode and the Stripe tests alike: a saved test card, a PaymentIntent
//! paid at once.

/// The form that saves the test card `number` as a PaymentMethod (in test mode any
/// expiry in the future and any CVC pass).
pub fn card(number: &str) -> [(&str, &str); 5] {
    [
        ("type", "card"),
        ("card[number]", number),
        ("card[exp_month]", "12"),
        ("card[exp_year]", "2034"),
        ("card[cvc]", "123"),
    ]
}

/// The form of a PaymentIntent of `amount` (minor units) of `currency` that `customer`
/// pays at once with `payment_method`.
pub fn paid_intent<'a>(
    amount: &'a str,
    currency: &'a str,
    customer: &'a str,
    payment_method: &'a str,
) -> [(&'a str, &'a str); 5] {
    [
        ("amount", amount),
        ("currency", currency),
        ("customer", customer),
        ("payment_method", payment_method),
        ("confirm", "true"),
    ]
}
