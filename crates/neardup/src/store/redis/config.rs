//! The store URL: servers, prefix and options (see the module documentation of
//! [`redis`](super)).

use std::time::Duration;

/// Where the servers are and how to use them, parsed from the store URL.
#[derive(Debug, Clone)]
pub(super) struct Config {
    /// The URL with any password masked, for messages.
    pub(super) display: String,
    /// Connection URLs: one, or a cluster's seed nodes.
    pub(super) nodes: Vec<String>,
    pub(super) cluster: bool,
    pub(super) prefix: String,
    pub(super) bands: u32,
    pub(super) lock_ttl: Duration,
    pub(super) lock_timeout: Duration,
    pub(super) timeout: Duration,
    pub(super) retries: u32,
}

impl Config {
    pub(super) fn parse(url: &str) -> std::result::Result<Config, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or("expected redis://host:port/db or redis+cluster://host:port,host:port/")?;
        let (cluster, tls) = match scheme {
            "redis" => (false, false),
            "rediss" => (false, true),
            "redis+cluster" => (true, false),
            "rediss+cluster" => (true, true),
            other => {
                return Err(format!(
                    "unknown scheme {other:?}: use redis://, rediss:// or redis+cluster://"
                ))
            }
        };
        if tls {
            return Err("this neardup was built without TLS support for Redis: use redis:// (a TLS tunnel such as stunnel or spiped can carry it) or build the redis crate with its tls-rustls feature".into());
        }
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = before_query.split_once('/').unwrap_or((before_query, ""));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let mut cfg = Config {
            display: String::new(),
            nodes: Vec::new(),
            cluster,
            prefix: "neardup".into(),
            bands: 4,
            lock_ttl: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            retries: 6,
        };
        let mut passthrough = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let ms = || {
                v.parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|_| format!("{k}={v:?}: expected milliseconds"))
            };
            match k {
                "prefix" => {
                    if v.is_empty()
                        || !v
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
                    {
                        return Err(format!(
                            "prefix={v:?}: use letters, digits and - _ . : only"
                        ));
                    }
                    cfg.prefix = v.to_owned();
                }
                "bands" => {
                    cfg.bands = match v.parse() {
                        Ok(b @ (0 | 2 | 4 | 8 | 16)) => b,
                        _ => return Err(format!("bands={v:?}: expected 0, 2, 4, 8 or 16")),
                    }
                }
                "lock_ttl_ms" => cfg.lock_ttl = ms()?,
                "lock_timeout_ms" => cfg.lock_timeout = ms()?,
                "timeout_ms" => cfg.timeout = ms()?,
                "retries" => {
                    cfg.retries = v
                        .parse()
                        .map_err(|_| format!("retries={v:?}: expected a count"))?
                }
                _ => passthrough.push(pair),
            }
        }
        if cfg.lock_ttl.is_zero() || cfg.timeout.is_zero() {
            return Err("lock_ttl_ms and timeout_ms must be positive".into());
        }
        let hosts: Vec<&str> = hosts.split(',').filter(|h| !h.is_empty()).collect();
        if hosts.is_empty() {
            return Err("no host: expected redis://host:port/db".into());
        }
        if !cluster && hosts.len() > 1 {
            return Err("several hosts need redis+cluster://".into());
        }
        let auth = userinfo.map_or(String::new(), |u| format!("{u}@"));
        let query = if passthrough.is_empty() {
            String::new()
        } else {
            format!("?{}", passthrough.join("&"))
        };
        let db = if cluster { "" } else { path };
        cfg.nodes = hosts
            .iter()
            .map(|h| format!("redis://{auth}{h}/{db}{query}"))
            .collect();
        let masked = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((user, _)) => format!("{user}:***@"),
                None => "***@".to_owned(),
            },
            None => String::new(),
        };
        cfg.display = format!(
            "{scheme}://{masked}{}",
            url.split_once('@').map_or(rest, |x| x.1)
        );
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_options_and_mask_passwords() {
        let c = Config::parse("redis://u:secret@10.0.0.1:6380/2?prefix=news&bands=8&retries=2")
            .unwrap();
        assert_eq!(c.nodes, ["redis://u:secret@10.0.0.1:6380/2"]);
        assert_eq!((c.prefix.as_str(), c.bands, c.retries), ("news", 8, 2));
        assert!(!c.display.contains("secret"), "{}", c.display);
        let c = Config::parse("redis+cluster://a:1,b:2/?prefix=x").unwrap();
        assert!(c.cluster);
        assert_eq!(c.nodes, ["redis://a:1/", "redis://b:2/"]);
        for bad in [
            "redis://h:1/?bands=3",
            "redis://h:1/?prefix=a{b}",
            "http://h:1",
            "redis://a:1,b:2/",
            "rediss://h:1/",
        ] {
            assert!(Config::parse(bad).is_err(), "{bad}");
        }
    }
}
