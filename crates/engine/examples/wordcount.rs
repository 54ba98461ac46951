//! Per-epoch word count with `unary_notify`, in the style of Listing 2.1 of Sager's thesis.
//!
//! `cargo run --release --example wordcount -- [EPOCHS] [WORDS_PER_EPOCH] [-w WORKERS]`
//! (defaults: 5 epochs, 40 words per epoch).
//!
//! Every worker generates its share of a deterministic text (lines of words drawn with a
//! skew towards a few frequent words), splits the lines into words, and sends them to a
//! `WordCount` operator through an exchange by `hash_of(word)`, so each word is counted on
//! one worker. The operator keeps counts per time in a `HashMap`, asks for a notification at
//! each time it sees, and emits `(word, count)` once that time is complete.
//!
//! The `(word, count)` results are gathered on worker 0 through one more exchange, so the
//! process that holds worker 0 sees every count however many processes run. It prints, per
//! epoch, the total and distinct number of words (and the top words when the epoch has at
//! most 1000 words), then an order-independent checksum of all `(epoch, word, count)`
//! results, and finally `ok` if the counts equal a sequential count of the same text (it
//! exits with status 1 otherwise). The other processes say that the results are gathered
//! elsewhere and check nothing.

mod common;

use std::collections::HashMap;
use timely_communication::ProgramFlags;
use timely_engine::dataflow::operators::{hash_of, Captured};
use timely_engine::dataflow::{Exchange, InputHandle, ProbeHandle};

const VOCABULARY: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "time",
    "data",
    "flow",
    "worker",
    "record",
    "operator",
    "frontier",
    "progress",
    "capability",
    "scope",
    "loop",
    "epoch",
    "message",
    "channel",
    "notification",
    "timestamp",
    "summary",
    "antichain",
    "pointstamp",
    "exchange",
    "probe",
    "input",
    "output",
    "graph",
];

const WORDS_PER_LINE: u64 = 8;

/// The `index`-th word of `epoch`: a deterministic draw skewed towards the vocabulary's head.
fn word_at(epoch: u64, index: u64) -> &'static str {
    let a = mix(epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index);
    let b = mix(a);
    let n = VOCABULARY.len() as u64;
    VOCABULARY[(a % n).min(b % n) as usize]
}

/// A 64-bit finalizer (splitmix64), enough to scatter the generator's inputs.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The lines worker `index` of `peers` contributes to `epoch` (lines are dealt round-robin).
fn lines_for(epoch: u64, words: u64, index: usize, peers: usize) -> Vec<String> {
    let lines = words.div_ceil(WORDS_PER_LINE);
    (index as u64..lines)
        .step_by(peers)
        .map(|line| {
            let end = ((line + 1) * WORDS_PER_LINE).min(words);
            (line * WORDS_PER_LINE..end).map(|i| word_at(epoch, i)).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

fn main() {
    let program = ProgramFlags::new("wordcount")
        .positional("EPOCHS", "epochs (default 5)")
        .positional("WORDS_PER_EPOCH", "words per epoch (default 40)");
    let (runtime, numbers, _) = common::runtime_and_numbers(program, &[5, 40]);
    let (epochs, words) = (numbers[0], numbers[1]);
    let results: Captured<u64, (String, u64)> = Captured::new();
    let shared = results.clone();
    let start = std::time::Instant::now();
    let workers = runtime
        .execute(move |worker| {
            let (index, peers) = (worker.index(), worker.peers());
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            worker.dataflow::<u64, _>(|scope| {
                let mut counts_by_time: HashMap<u64, HashMap<String, u64>> = HashMap::new();
                scope
                    .input_from(&mut input)
                    .flat_map(|line: String| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                    .unary_notify(
                        Exchange::new(|word: &String| hash_of(word)),
                        "WordCount",
                        move |input, output, notificator| {
                            input.for_each(|time, data| {
                                let counts = counts_by_time.entry(*time.time()).or_default();
                                for word in data.drain(..) {
                                    *counts.entry(word).or_insert(0) += 1;
                                }
                                notificator.notify_at(time.retain());
                            });
                            notificator.for_each(|time, _requests, _notificator| {
                                if let Some(counts) = counts_by_time.remove(time.time()) {
                                    output.session(&time).give_iterator(counts);
                                }
                            });
                        },
                    )
                    .exchange(|_| 0)
                    .probe_with(&probe)
                    .capture_into(&shared);
            });
            for epoch in 0..epochs {
                input.send_batch(&mut lines_for(epoch, words, index, peers));
                input.advance_to(epoch + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            worker.index()
        })
        .unwrap_or_else(|e| {
            eprintln!("wordcount failed: {}", e);
            std::process::exit(1)
        });
    let elapsed = start.elapsed();
    if !workers.contains(&0) {
        println!("the counts are gathered on worker 0, in another process");
        return;
    }
    let results = results.extract();
    let mut checksum = 0u64;
    let mut by_epoch: Vec<Vec<(String, u64)>> = vec![Vec::new(); epochs as usize];
    for (epoch, (word, count)) in results {
        checksum = checksum.wrapping_add(mix(hash_of(&(epoch, &word, count))));
        by_epoch[epoch as usize].push((word, count));
    }
    let mut correct = true;
    for (epoch, counts) in by_epoch.iter_mut().enumerate() {
        let total: u64 = counts.iter().map(|(_, c)| c).sum();
        counts.sort_by(|(w1, c1), (w2, c2)| c2.cmp(c1).then(w1.cmp(w2)));
        let mut line = format!("epoch {}: {} words, {} distinct", epoch, total, counts.len());
        if words <= 1000 {
            let top: Vec<String> = counts.iter().take(3).map(|(w, c)| format!("{} {}", w, c)).collect();
            line.push_str(&format!("; top: {}", top.join(", ")));
        }
        println!("{}", line);
        correct &= *counts == reference(epoch as u64, words);
    }
    println!("checksum {:016x} ({} epochs x {} words in {:.3?})", checksum, epochs, words, elapsed);
    if correct {
        println!("ok");
    } else {
        println!("MISMATCH: the counts differ from a sequential count");
        std::process::exit(1);
    }
}

/// The counts of `epoch` computed sequentially, sorted like the program's results.
fn reference(epoch: u64, words: u64) -> Vec<(String, u64)> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for line in lines_for(epoch, words, 0, 1) {
        for word in line.split_whitespace() {
            *counts.entry(word.to_owned()).or_insert(0) += 1;
        }
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by(|(w1, c1), (w2, c2)| c2.cmp(c1).then(w1.cmp(w2)));
    counts
}
