//! Which IP addresses the proxy refuses to connect to, and why.
//!
//! Refused (unless the host is allow-listed): cloud metadata endpoints, loopback,
//! private (RFC 1918, IPv6 unique-local and site-local), link-local, carrier-grade NAT,
//! "this network"/unspecified, multicast, broadcast, documentation and other reserved
//! ranges, every IPv4-mapped or IPv4-compatible IPv6 address, and IPv6 forms that embed a
//! refused IPv4 address (NAT64, 6to4).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrClass {
    /// A cloud metadata endpoint (`169.254.169.254`, `fd00:ec2::254`, …).
    Metadata,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, `fc00::/7`, `fec0::/10`.
    Private,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// Carrier-grade NAT, `100.64/10`.
    Cgnat,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment, Teredo and other reserved ranges.
    Reserved,
}

impl AddrClass {
    /// The rule's stable name (`loopback`, `metadata`, …).
    pub fn rule(self) -> &'static str {
        match self {
            AddrClass::Metadata => "metadata",
            AddrClass::Loopback => "loopback",
            AddrClass::Private => "private",
            AddrClass::LinkLocal => "link_local",
            AddrClass::Cgnat => "cgnat",
            AddrClass::Unspecified => "unspecified",
            AddrClass::Multicast => "multicast",
            AddrClass::Broadcast => "broadcast",
            AddrClass::Reserved => "reserved",
        }
    }

    /// A phrase for messages: "a loopback address".
    pub fn phrase(self) -> &'static str {
        match self {
            AddrClass::Metadata => "a cloud metadata address",
            AddrClass::Loopback => "a loopback address",
            AddrClass::Private => "a private-network address",
            AddrClass::LinkLocal => "a link-local address",
            AddrClass::Cgnat => "a carrier-grade NAT (100.64.0.0/10) address",
            AddrClass::Unspecified => "an unspecified (\"this network\") address",
            AddrClass::Multicast => "a multicast address",
            AddrClass::Broadcast => "the broadcast address",
            AddrClass::Reserved => "a reserved (non-routable) address",
        }
    }
}

/// How an IPv6 address carries an IPv4 one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedding {
    /// `::ffff:a.b.c.d` (always refused: it names an IPv4 host through IPv6 syntax).
    Mapped,
    /// `::a.b.c.d` (deprecated; always refused).
    Compatible,
    /// `64:ff9b::a.b.c.d` (NAT64; refused when the IPv4 address is).
    Nat64,
    /// `2002:aabb:ccdd::/48` (6to4; refused when the IPv4 address is).
    SixToFour,
}

impl Embedding {
    /// The rule's stable name.
    pub fn rule(self) -> &'static str {
        match self {
            Embedding::Mapped => "ipv4_mapped",
            Embedding::Compatible => "ipv4_compatible",
            Embedding::Nat64 => "nat64",
            Embedding::SixToFour => "6to4",
        }
    }

    fn phrase(self) -> &'static str {
        match self {
            Embedding::Mapped => "an IPv4-mapped IPv6 address",
            Embedding::Compatible => "an IPv4-compatible IPv6 address",
            Embedding::Nat64 => "a NAT64 IPv6 address",
            Embedding::SixToFour => "a 6to4 IPv6 address",
        }
    }
}

/// A refused address: its class, and the IPv4 address it embeds when it is an IPv6 form
/// of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    /// The address that was checked.
    pub addr: IpAddr,
    /// The class that refused it (of the embedded IPv4 address when there is one;
    /// `None` for an IPv4-mapped/compatible address of an otherwise public host).
    pub class: Option<AddrClass>,
    /// How an IPv6 address embeds an IPv4 one.
    pub embedded: Option<(Embedding, Ipv4Addr)>,
}

impl Blocked {
    /// The rule that refused it: the embedding's (`ipv4_mapped`, …) when there is one,
    /// else the class's.
    pub fn rule(&self) -> &'static str {
        match (self.embedded, self.class) {
            (Some((e, _)), _) => e.rule(),
            (None, Some(c)) => c.rule(),
            (None, None) => "reserved",
        }
    }

    /// "127.0.0.1 is a loopback address", "::ffff:7f00:1 is an IPv4-mapped IPv6 address
    /// (of 127.0.0.1, a loopback address)".
    pub fn describe(&self) -> String {
        match (self.embedded, self.class) {
            (Some((e, v4)), Some(c)) => format!("{} is {} (of {v4}, {})", self.addr, e.phrase(), c.phrase()),
            (Some((e, v4)), None) => format!("{} is {} (of {v4})", self.addr, e.phrase()),
            (None, Some(c)) => format!("{} is {}", self.addr, c.phrase()),
            (None, None) => format!("{} is not a public address", self.addr),
        }
    }
}

/// Well-known metadata endpoints: AWS/GCP/Azure/OpenStack/DigitalOcean/Oracle
/// (`169.254.169.254`), AWS ECS and EKS (`169.254.170.2`, `169.254.170.23`), Alibaba
/// (`100.100.100.200`), Azure wire server (`168.63.129.16`), Oracle (`192.0.0.192`).
const METADATA_V4: &[[u8; 4]] = &[
    [169, 254, 169, 254],
    [169, 254, 170, 2],
    [169, 254, 170, 23],
    [100, 100, 100, 200],
    [168, 63, 129, 16],
    [192, 0, 0, 192],
];

/// AWS's IPv6 metadata endpoint.
const METADATA_V6: &[Ipv6Addr] = &[Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)];

/// Host names that always mean a metadata service.
pub const METADATA_HOSTS: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
];

fn in_v4(ip: Ipv4Addr, net: [u8; 4], bits: u32) -> bool {
    let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

/// The class of a refused IPv4 address, `None` when it is public.
pub fn classify_v4(ip: Ipv4Addr) -> Option<AddrClass> {
    let o = ip.octets();
    if METADATA_V4.contains(&o) {
        return Some(AddrClass::Metadata);
    }
    let table: &[([u8; 4], u32, AddrClass)] = &[
        ([0, 0, 0, 0], 8, AddrClass::Unspecified),
        ([127, 0, 0, 0], 8, AddrClass::Loopback),
        ([10, 0, 0, 0], 8, AddrClass::Private),
        ([172, 16, 0, 0], 12, AddrClass::Private),
        ([192, 168, 0, 0], 16, AddrClass::Private),
        ([100, 64, 0, 0], 10, AddrClass::Cgnat),
        ([169, 254, 0, 0], 16, AddrClass::LinkLocal),
        ([192, 0, 0, 0], 24, AddrClass::Reserved),
        ([192, 0, 2, 0], 24, AddrClass::Reserved),
        ([192, 88, 99, 0], 24, AddrClass::Reserved),
        ([198, 18, 0, 0], 15, AddrClass::Reserved),
        ([198, 51, 100, 0], 24, AddrClass::Reserved),
        ([203, 0, 113, 0], 24, AddrClass::Reserved),
        ([255, 255, 255, 255], 32, AddrClass::Broadcast),
        ([224, 0, 0, 0], 4, AddrClass::Multicast),
        ([240, 0, 0, 0], 4, AddrClass::Reserved),
    ];
    table
        .iter()
        .find(|(net, bits, _)| in_v4(ip, *net, *bits))
        .map(|(_, _, c)| *c)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, bits: u32) -> bool {
    let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
    (u128::from(ip) & mask) == (u128::from(net) & mask)
}

/// The IPv4 address an IPv6 address embeds, and how.
pub fn embedded_v4(ip: Ipv6Addr) -> Option<(Embedding, Ipv4Addr)> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0; 5] && s[5] == 0xffff {
        return Some((Embedding::Mapped, low));
    }
    // `::` and `::1` are themselves, not IPv4-compatible forms
    if s[..6] == [0; 6] && u128::from(ip) > 1 {
        return Some((Embedding::Compatible, low));
    }
    if in_v6(ip, Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96) {
        return Some((Embedding::Nat64, low));
    }
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return Some((Embedding::SixToFour, v4));
    }
    None
}

/// The class of a refused IPv6 address (ignoring embedded IPv4), `None` when public.
pub fn classify_v6(ip: Ipv6Addr) -> Option<AddrClass> {
    if METADATA_V6.contains(&ip) {
        return Some(AddrClass::Metadata);
    }
    if ip.is_unspecified() {
        return Some(AddrClass::Unspecified);
    }
    if ip.is_loopback() {
        return Some(AddrClass::Loopback);
    }
    let table: &[(Ipv6Addr, u32, AddrClass)] = &[
        (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, AddrClass::LinkLocal),
        (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, AddrClass::Private),
        (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, AddrClass::Private),
        (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, AddrClass::Multicast),
        (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, AddrClass::Reserved),
        (Ipv6Addr::new(0x0100, 0, 0, 0, 0, 0, 0, 0), 64, AddrClass::Reserved),
        // Teredo: the client's IPv4 address is obfuscated inside; refuse it outright
        (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, AddrClass::Reserved),
    ];
    table
        .iter()
        .find(|(net, bits, _)| in_v6(ip, *net, *bits))
        .map(|(_, _, c)| *c)
}

/// Checks one address: `Ok` when the proxy may connect to it without an allow-list entry.
pub fn check_ip(addr: IpAddr) -> Result<(), Blocked> {
    match addr {
        IpAddr::V4(v4) => match classify_v4(v4) {
            None => Ok(()),
            Some(c) => Err(Blocked {
                addr,
                class: Some(c),
                embedded: None,
            }),
        },
        IpAddr::V6(v6) => {
            if let Some((e, v4)) = embedded_v4(v6) {
                let class = classify_v4(v4);
                let always = matches!(e, Embedding::Mapped | Embedding::Compatible);
                if always || class.is_some() {
                    return Err(Blocked {
                        addr,
                        class,
                        embedded: Some((e, v4)),
                    });
                }
                return Ok(());
            }
            match classify_v6(v6) {
                None => Ok(()),
                Some(c) => Err(Blocked {
                    addr,
                    class: Some(c),
                    embedded: None,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> Option<&'static str> {
        check_ip(s.parse().unwrap()).err().map(|b| b.rule())
    }

    #[test]
    fn v4_classes() {
        assert_eq!(rule("169.254.169.254"), Some("metadata"));
        assert_eq!(rule("100.100.100.200"), Some("metadata"));
        assert_eq!(rule("168.63.129.16"), Some("metadata"));
        assert_eq!(rule("127.0.0.1"), Some("loopback"));
        assert_eq!(rule("127.255.1.2"), Some("loopback"));
        assert_eq!(rule("10.1.2.3"), Some("private"));
        assert_eq!(rule("172.16.0.1"), Some("private"));
        assert_eq!(rule("172.31.255.255"), Some("private"));
        assert_eq!(rule("192.168.1.1"), Some("private"));
        assert_eq!(rule("100.64.0.1"), Some("cgnat"));
        assert_eq!(rule("100.127.255.254"), Some("cgnat"));
        assert_eq!(rule("169.254.1.1"), Some("link_local"));
        assert_eq!(rule("0.0.0.0"), Some("unspecified"));
        assert_eq!(rule("0.1.2.3"), Some("unspecified"));
        assert_eq!(rule("224.0.0.1"), Some("multicast"));
        assert_eq!(rule("255.255.255.255"), Some("broadcast"));
        assert_eq!(rule("240.0.0.1"), Some("reserved"));
        assert_eq!(rule("192.0.2.7"), Some("reserved"));
        assert_eq!(rule("198.18.0.1"), Some("reserved"));
        // public neighbours of refused ranges
        for ok in [
            "172.32.0.1",
            "172.15.255.255",
            "100.128.0.1",
            "100.63.255.255",
            "8.8.8.8",
            "1.1.1.1",
            "169.253.0.1",
        ] {
            assert_eq!(rule(ok), None, "{ok}");
        }
    }

    #[test]
    fn v6_classes() {
        assert_eq!(rule("::1"), Some("loopback"));
        assert_eq!(rule("::"), Some("unspecified"));
        assert_eq!(rule("fe80::1"), Some("link_local"));
        assert_eq!(rule("fd12:3456::1"), Some("private"));
        assert_eq!(rule("fd00:ec2::254"), Some("metadata"));
        assert_eq!(rule("ff02::1"), Some("multicast"));
        assert_eq!(rule("2001:db8::1"), Some("reserved"));
        assert_eq!(rule("2001:0:4136:e378:8000:63bf:3fff:fdd2"), Some("reserved"));
        assert_eq!(rule("2606:4700:4700::1111"), None);
    }

    #[test]
    fn embedded_ipv4() {
        let b = check_ip("::ffff:127.0.0.1".parse().unwrap()).unwrap_err();
        assert_eq!(b.rule(), "ipv4_mapped");
        assert_eq!(b.class, Some(AddrClass::Loopback));
        assert!(
            b.describe().contains("IPv4-mapped") && b.describe().contains("loopback"),
            "{}",
            b.describe()
        );
        // mapped and compatible forms are refused even for public IPv4 addresses
        assert_eq!(rule("::ffff:8.8.8.8"), Some("ipv4_mapped"));
        assert_eq!(rule("::ffff:169.254.169.254"), Some("ipv4_mapped"));
        assert_eq!(rule("::10.0.0.1"), Some("ipv4_compatible"));
        // NAT64 and 6to4 only when the embedded address is refused
        assert_eq!(rule("64:ff9b::10.0.0.1"), Some("nat64"));
        assert_eq!(rule("64:ff9b::8.8.8.8"), None);
        assert_eq!(rule("2002:7f00:1::1"), Some("6to4"));
        assert_eq!(rule("2002:0808:0808::1"), None);
    }
}
