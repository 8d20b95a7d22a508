/* Threads that each query their own in-memory SQLite database (Debian's libsqlite3, which keeps
 * memory statistics by default and is built without lookaside, so every small allocation goes
 * through sqlite3Malloc). `before` runs SQLite as shipped; `after` turns the statistics off with
 * sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) before the first connection, the fix of
 * Expensify/Bedrock#271. Usage: driver before|after [THREADS]; THREADS defaults to
 * STALLSCOPE_THREADS, else 2. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 2000, QUERIES = 80000 };

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        exit(1);
    }
}

static int queries; /* per thread: the QUERIES split among the threads */

static void *worker(void *arg) {
    long long *sum = arg;
    sqlite3 *db;
    check(sqlite3_open(":memory:", &db), NULL, "open");
    check(sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER)", 0, 0, 0), db,
          "create");
    check(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
    sqlite3_stmt *ins;
    check(sqlite3_prepare_v2(db, "INSERT INTO t(name, v) VALUES (?1, ?2)", -1, &ins, 0), db, "prepare");
    for (int i = 0; i < ROWS; i++) {
        char name[32];
        snprintf(name, sizeof name, "name-%d", i * 7919 % ROWS);
        sqlite3_bind_text(ins, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(ins, 2, i);
        check(sqlite3_step(ins), db, "insert");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
    /* The workload of the tracker: many short reads, each a statement prepared, run and freed. */
    for (int q = 0; q < queries; q++) {
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT name, v FROM t WHERE id BETWEEN %d AND %d ORDER BY name", q % ROWS,
                 q % ROWS + 8);
        sqlite3_stmt *st;
        check(sqlite3_prepare_v2(db, sql, -1, &st, 0), db, "prepare");
        while (sqlite3_step(st) == SQLITE_ROW)
            *sum += sqlite3_column_int(st, 1) + (long long)strlen((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "before") && strcmp(argv[1], "after"))) {
        fprintf(stderr, "usage: %s before|after [THREADS]\n", argv[0]);
        return 2;
    }
    const char *env = getenv("STALLSCOPE_THREADS");
    int threads = argc > 2 ? atoi(argv[2]) : env ? atoi(env) : 2;
    if (threads < 1 || threads > 64)
        threads = 2;
    queries = QUERIES / threads;
    if (!strcmp(argv[1], "after"))
        check(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0), NULL, "config");
    pthread_t t[64];
    long long sums[64] = {0};
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, &sums[i]);
    long long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += sums[i];
    }
    printf("%d threads, checksum %lld\n", threads, total);
    return 0;
}
