//! Prints every record of a kopf log as one JSON line, then the stats.
//!
//! `cargo run -p kopf-log --example dump -- path/to/pod.log [refkey]`

use std::io::BufReader;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "/dev/stdin".to_string());
    let options = kopf_log::ParserOptions {
        refkey: args.next(),
        ..Default::default()
    };
    let file = std::fs::File::open(path)?;
    let mut it = kopf_log::records(BufReader::new(file), options);
    for rec in it.by_ref() {
        let rec = rec?;
        println!("{}", serde_json::to_string(&rec).unwrap_or_default());
    }
    eprintln!("{:?}", it.stats());
    Ok(())
}
