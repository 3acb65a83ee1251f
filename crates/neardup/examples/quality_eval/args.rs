//! `--key value` and `--flag` command-line arguments.

pub(crate) struct Args(Vec<(String, Option<String>)>);

impl Args {
    pub(crate) fn parse(raw: &[String]) -> Args {
        let mut v = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let k = raw[i].trim_start_matches("--").to_owned();
            if i + 1 < raw.len() && !raw[i + 1].starts_with("--") {
                v.push((k, Some(raw[i + 1].clone())));
                i += 2;
            } else {
                v.push((k, None));
                i += 1;
            }
        }
        Args(v)
    }
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(x, _)| x == k)
            .and_then(|(_, v)| v.as_deref())
    }
    pub(crate) fn all(&self, k: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(x, _)| x == k)
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }
    pub(crate) fn flag(&self, k: &str) -> bool {
        self.0.iter().any(|(x, _)| x == k)
    }
    pub(crate) fn num<T: std::str::FromStr>(&self, k: &str, default: T) -> T {
        self.get(k).and_then(|v| v.parse().ok()).unwrap_or(default)
    }
}
