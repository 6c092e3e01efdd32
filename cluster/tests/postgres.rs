//! The throwaway PostgreSQL cluster: it answers, keeps what it was given across a stop and a start on the same
//! port, and is gone when dropped.

use edge_cluster::Postgres;

#[test]
fn a_throwaway_cluster_answers_survives_a_restart_and_is_removed_when_dropped() {
    let mut pg = Postgres::throwaway().unwrap();
    let dir = pg.dir().to_path_buf();
    pg.create_database("edge").unwrap();
    pg.create_database("edge").unwrap();
    pg.psql("edge", "CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('kept')").unwrap();
    let port = pg.port();
    pg.stop().unwrap();
    assert!(pg.psql("edge", "SELECT 1").is_err(), "stopped");
    pg.start_again().unwrap();
    assert_eq!(pg.port(), port);
    assert_eq!(pg.psql("edge", "SELECT v FROM t").unwrap().trim(), "kept");
    assert!(pg.url("edge").starts_with("postgres://postgres@127.0.0.1:"));
    drop(pg);
    assert!(!dir.exists());
}
