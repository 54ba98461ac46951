//! Hostfiles: where each process of a cluster listens.
//!
//! This module owns the hostfile format (one `host:port` per line, process `i` on line `i`;
//! `#` starts a comment; blank lines are ignored; IPv6 hosts in brackets, `[::1]:2101`) and the
//! default addresses of a cluster on one machine. It checks the syntax of each address but must
//! not resolve host names or open sockets: names are resolved when connecting, so a hostfile
//! can be checked before the hosts are up.

use std::path::Path;

use super::{AddressError, NetworkError};

/// The port of process 0 in [`default_addresses`]; process `i` uses `DEFAULT_BASE_PORT + i`.
pub const DEFAULT_BASE_PORT: u16 = 2101;

/// The addresses of a cluster whose `processes` processes all run on this machine:
/// `localhost:2101`, `localhost:2102`, ...
///
/// Ports past 65535 are not representable; callers with that many processes need a hostfile.
pub fn default_addresses(processes: usize) -> Vec<String> {
    (0..processes).map(|index| format!("localhost:{}", usize::from(DEFAULT_BASE_PORT) + index)).collect()
}

/// Reads the hostfile at `path` and returns the addresses of the first `processes` processes.
///
/// # Errors
///
/// An unreadable file, a malformed line (the error names its number and content), or fewer
/// than `processes` addresses.
pub fn read_hostfile(path: impl AsRef<Path>, processes: usize) -> Result<Vec<String>, NetworkError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|error| NetworkError::HostfileUnreadable {
        path: path.display().to_string(),
        reason: error.to_string(),
    })?;
    let mut addresses = parse_hostfile(&text)?;
    if addresses.len() < processes {
        return Err(NetworkError::TooFewHosts { found: addresses.len(), needed: processes });
    }
    addresses.truncate(processes);
    Ok(addresses)
}

/// Parses the text of a hostfile into its addresses, in order.
///
/// # Errors
///
/// The first line that is neither blank, a comment, nor a valid `host:port`.
pub fn parse_hostfile(text: &str) -> Result<Vec<String>, NetworkError> {
    let mut addresses = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        check_address(content).map_err(|reason| NetworkError::HostfileLine {
            line: number + 1,
            content: line.to_string(),
            reason,
        })?;
        addresses.push(content.to_string());
    }
    Ok(addresses)
}

/// Checks that `address` is `host:port` or `[ipv6]:port`, saying what is wrong if not.
fn check_address(address: &str) -> Result<(), AddressError> {
    let (host, port) = split_host_port(address)?;
    if host.is_empty() {
        return Err(AddressError::EmptyHost);
    }
    if host.chars().any(char::is_whitespace) {
        return Err(AddressError::SpaceInHost);
    }
    match port.parse::<u16>() {
        Ok(0) => Err(AddressError::PortZero),
        Ok(_) => Ok(()),
        Err(_) => Err(AddressError::BadPort(port.to_string())),
    }
}

/// Splits `host:port`, where a host containing `:` must be bracketed (`[::1]:2101`).
fn split_host_port(address: &str) -> Result<(&str, &str), AddressError> {
    if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or(AddressError::UnclosedBracket)?;
        let port = after.strip_prefix(':').ok_or(AddressError::NoPortAfterBracket)?;
        return Ok((host, port));
    }
    let (host, port) = address.rsplit_once(':').ok_or(AddressError::NoPort)?;
    if host.contains(':') {
        return Err(AddressError::UnbracketedIpv6);
    }
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_ipv4_ipv6_comments_and_blank_lines() {
        let text = "# cluster\n\nlocalhost:2101\n  10.0.0.2:2102  # second\n[::1]:2103\n";
        assert_eq!(
            parse_hostfile(text),
            Ok(vec!["localhost:2101".to_string(), "10.0.0.2:2102".to_string(), "[::1]:2103".to_string()])
        );
    }

    #[test]
    fn errors_name_the_line_and_its_content() {
        let cases = [
            ("a:1\nnoport\n", 2, "the port is missing"),
            ("a:99999", 1, "not a number"),
            ("\n\n::1:2101", 3, "needs brackets"),
            ("[::1:2101", 1, "lacks its ']'"),
            ("[::1]2101", 1, "missing after ']'"),
            (":2101", 1, "host is empty"),
            ("a:0", 1, "port 0"),
        ];
        for (text, line, reason) in cases {
            let error = parse_hostfile(text).expect_err(text);
            let message = error.to_string();
            assert!(
                matches!(error, NetworkError::HostfileLine { line: l, .. } if l == line),
                "{text:?}: {message}"
            );
            assert!(message.contains(reason), "{text:?}: {message}");
            assert!(message.contains(&format!("line {line}")), "{message}");
        }
    }

    #[test]
    fn default_addresses_count_up_from_2101() {
        assert_eq!(default_addresses(3), vec!["localhost:2101", "localhost:2102", "localhost:2103"]);
    }

    #[test]
    fn read_hostfile_checks_the_count_and_truncates() {
        let path = std::env::temp_dir().join(format!("timely-hostfile-{}", std::process::id()));
        std::fs::write(&path, "a:1\nb:2\nc:3\n").expect("write a temporary hostfile");
        assert_eq!(read_hostfile(&path, 2), Ok(vec!["a:1".into(), "b:2".into()]));
        let error = read_hostfile(&path, 4).expect_err("too few hosts");
        assert_eq!(error, NetworkError::TooFewHosts { found: 3, needed: 4 });
        std::fs::remove_file(&path).expect("remove the temporary hostfile");
        let missing = read_hostfile(&path, 1).expect_err("missing file");
        assert!(missing.to_string().starts_with("cannot read hostfile"));
    }
}
