//! The timeline's dependency binding when an update coincides with the end of the waiting
//! track's previous slice, and the per-track busy / wait / idle split of the profile.

use tpbsim_isa::Engine;

use super::race::Agent;
use super::timeline::{Stamp, Timeline, CLOCK_GHZ};

fn engines() -> Timeline {
    Timeline::new(
        ["pe", "act", "pool", "dve", "sp"]
            .map(String::from)
            .to_vec(),
    )
}

/// ACT and POOL run at the same clock, so the same cycles end at the same time.
const CYCLES: u64 = 140;

#[test]
fn an_update_at_the_moment_the_track_is_free_does_not_set_the_start() {
    assert_eq!(
        CLOCK_GHZ[Engine::Act as usize],
        CLOCK_GHZ[Engine::Pool as usize]
    );
    let mut t = engines();
    t.start(Engine::Pool, 0.0);
    let pool_end = t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    t.start(Engine::Act, 0.0);
    let act_end = t.finish(Engine::Act, "A0", String::new(), CYCLES);
    assert_eq!(act_end, pool_end);
    // POOL's next bundle waits for ACT's end-of-slice update, made the moment POOL is free:
    // its start is the end of its own previous slice, which needs no dependency.
    t.pending_flows.push((
        Engine::Act as Agent,
        Stamp::end(act_end),
        "semaphore 2".into(),
    ));
    assert_eq!(t.start(Engine::Pool, act_end), pool_end);
    t.finish(Engine::Pool, "P1", String::new(), CYCLES);
    let p1 = &t.slices[2];
    assert_eq!((p1.name.as_str(), p1.waited, p1.dep), ("P1", 0.0, None));
    assert_eq!(t.flows.len(), 1, "the wait is still a flow");
    let path: Vec<String> = t
        .profile()
        .critical_path
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(path, ["P0", "P1"]);

    // One nanosecond later, the update sets the start.
    let mut t = engines();
    t.start(Engine::Pool, 0.0);
    let pool_end = t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    let late = Stamp::end(pool_end + 1.0);
    t.pending_flows
        .push((Engine::Act as Agent, late, "semaphore 2".into()));
    t.start(Engine::Pool, late.t);
    t.finish(Engine::Pool, "P1", String::new(), CYCLES);
    assert_eq!(t.slices[1].dep, Some((Engine::Act as Agent, late)));
    assert_eq!(t.slices[1].waited, late.t - pool_end);
}

#[test]
fn idle_time_is_what_busy_and_wait_leave_of_the_makespan() {
    let mut t = engines();
    t.start(Engine::Pool, 0.0);
    let e = t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    // ACT waits until POOL's end, then runs as long.
    t.start(Engine::Act, e);
    let end = t.finish(Engine::Act, "A0", String::new(), CYCLES);
    assert_eq!(end, 2.0 * e);
    let p = t.profile();
    assert_eq!(p.makespan_ns, end);
    let split = |track: &str| {
        let x = p.tracks.iter().find(|x| x.track == track).unwrap();
        (x.busy_ns, x.wait_ns, x.idle_ns)
    };
    assert_eq!(split("act"), (e, e, 0.0));
    assert_eq!(split("pool"), (e, 0.0, e));
    assert_eq!(split("pe"), (0.0, 0.0, end));
}

/// The track metadata of a Chrome trace: `(pid, tid, thread name, sort index)` in order.
fn tracks(j: &serde_json::Value) -> Vec<(u64, u64, String, u64)> {
    let evs = j["traceEvents"].as_array().unwrap();
    let names = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name");
    let sorts: Vec<_> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_sort_index")
        .collect();
    names
        .zip(&sorts)
        .map(|(n, s)| {
            assert_eq!(
                (n["pid"].clone(), n["tid"].clone()),
                (s["pid"].clone(), s["tid"].clone())
            );
            (
                n["pid"].as_u64().unwrap(),
                n["tid"].as_u64().unwrap(),
                n["args"]["name"].as_str().unwrap().to_string(),
                s["args"]["sort_index"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_chrome_trace_names_every_engine_and_only_the_queues_that_moved_data() {
    let labels = [
        "pe", "act", "pool", "dve", "sp", "sp:in", "act:out", "pool:in",
    ]
    .map(String::from)
    .to_vec();
    let mut t = Timeline::new(labels);
    // Only POOL runs a bundle and only queues 5 and 7 move data; queue 6 stays empty.
    t.start(Engine::Pool, 0.0);
    t.finish(Engine::Pool, "P0", String::new(), CYCLES);
    t.dma(5, Engine::Pool as Agent, "in".into(), 64, 0.0);
    let end = t.dma(7, Engine::Pool as Agent, "in2".into(), 64, 0.0);
    // DVE waits for queue 7: one flow.
    t.pending_flows
        .push((7, Stamp::end(end), "semaphore 1".into()));
    t.start(Engine::Dve, end);
    t.finish(Engine::Dve, "D0", String::new(), CYCLES);
    let j = t.to_chrome();
    let want: Vec<(u64, u64, String, u64)> = vec![
        (1, 1, "pe engine".into(), 0),
        (1, 2, "act engine".into(), 1),
        (1, 3, "pool engine".into(), 2),
        (1, 4, "dve engine".into(), 3),
        (1, 5, "sp engine".into(), 4),
        (1, 6, "DMA sp:in".into(), 5),
        (1, 8, "DMA pool:in".into(), 7),
    ];
    assert_eq!(tracks(&j), want);
    let evs = j["traceEvents"].as_array().unwrap();
    assert_eq!(evs[0]["name"], "process_name");
    assert_eq!(evs[0]["args"]["name"], "NeuronCore");
    let slices: Vec<(u64, &str)> = evs
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| (e["tid"].as_u64().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(slices, [(3, "P0"), (6, "in"), (8, "in2"), (4, "D0")]);
    let flows = |j: &serde_json::Value| -> Vec<(String, u64, u64, u64)> {
        j["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "s" || e["ph"] == "f")
            .map(|e| {
                let n = |k: &str| e[k].as_u64().unwrap();
                (
                    e["ph"].as_str().unwrap().to_string(),
                    n("id"),
                    n("pid"),
                    n("tid"),
                )
            })
            .collect()
    };
    assert_eq!(flows(&j), [("s".into(), 0, 1, 8), ("f".into(), 0, 1, 4)]);

    // Two cores: one process each, named by core and subgraph, with the same tracks.
    let two = Timeline::cores_to_chrome(&[("sg00".into(), &t), ("sg01".into(), &t)]);
    let processes: Vec<(u64, &str)> = two["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        processes,
        [(1, "NeuronCore 0 (sg00)"), (2, "NeuronCore 1 (sg01)")]
    );
    // Flow ids are unique across the processes: the second core's carry its number above
    // bit 40.
    let second = 2u64 << 40;
    assert_eq!(
        flows(&two),
        [
            ("s".into(), 0, 1, 8),
            ("f".into(), 0, 1, 4),
            ("s".into(), second, 2, 8),
            ("f".into(), second, 2, 4),
        ]
    );
    let both = tracks(&two);
    assert_eq!(both.len(), 2 * want.len());
    for (i, (pid, tid, name, sort)) in both.into_iter().enumerate() {
        let w = &want[i % want.len()];
        assert_eq!(
            (pid, tid, &name, sort),
            (1 + (i / want.len()) as u64, w.1, &w.2, w.3)
        );
    }
}
