-- TPC-C-like schema for PostgreSQL: nine tables, their primary keys, and the two
-- secondary indexes the transactions need. Money is NUMERIC (exact decimals).
-- Statements after the "-- indexes" marker are run by the loader after the data is in.
-- After "-- procedures": the transactions as PL/pgSQL functions (run option
-- procedures=on), each ended by a line "//"; a run installs them before its first step.

CREATE TABLE warehouse (
    w_id        INTEGER       NOT NULL,
    w_name      VARCHAR(10)   NOT NULL,
    w_street_1  VARCHAR(20)   NOT NULL,
    w_street_2  VARCHAR(20)   NOT NULL,
    w_city      VARCHAR(20)   NOT NULL,
    w_state     CHAR(2)       NOT NULL,
    w_zip       CHAR(9)       NOT NULL,
    w_tax       NUMERIC(4,4)  NOT NULL,
    w_ytd       NUMERIC(12,2) NOT NULL,
    PRIMARY KEY (w_id)
);

CREATE TABLE district (
    d_id        SMALLINT      NOT NULL,
    d_w_id      INTEGER       NOT NULL,
    d_name      VARCHAR(10)   NOT NULL,
    d_street_1  VARCHAR(20)   NOT NULL,
    d_street_2  VARCHAR(20)   NOT NULL,
    d_city      VARCHAR(20)   NOT NULL,
    d_state     CHAR(2)       NOT NULL,
    d_zip       CHAR(9)       NOT NULL,
    d_tax       NUMERIC(4,4)  NOT NULL,
    d_ytd       NUMERIC(12,2) NOT NULL,
    d_next_o_id INTEGER       NOT NULL,
    PRIMARY KEY (d_w_id, d_id)
);

CREATE TABLE customer (
    c_id           INTEGER       NOT NULL,
    c_d_id         SMALLINT      NOT NULL,
    c_w_id         INTEGER       NOT NULL,
    c_first        VARCHAR(16)   NOT NULL,
    c_middle       CHAR(2)       NOT NULL,
    c_last         VARCHAR(16)   NOT NULL,
    c_street_1     VARCHAR(20)   NOT NULL,
    c_street_2     VARCHAR(20)   NOT NULL,
    c_city         VARCHAR(20)   NOT NULL,
    c_state        CHAR(2)       NOT NULL,
    c_zip          CHAR(9)       NOT NULL,
    c_phone        CHAR(16)      NOT NULL,
    c_since        TIMESTAMP     NOT NULL,
    c_credit       CHAR(2)       NOT NULL,
    c_credit_lim   NUMERIC(12,2) NOT NULL,
    c_discount     NUMERIC(4,4)  NOT NULL,
    c_balance      NUMERIC(12,2) NOT NULL,
    c_ytd_payment  NUMERIC(12,2) NOT NULL,
    c_payment_cnt  INTEGER       NOT NULL,
    c_delivery_cnt INTEGER       NOT NULL,
    c_data         VARCHAR(500)  NOT NULL,
    PRIMARY KEY (c_w_id, c_d_id, c_id)
);

CREATE TABLE history (
    h_c_id   INTEGER       NOT NULL,
    h_c_d_id SMALLINT      NOT NULL,
    h_c_w_id INTEGER       NOT NULL,
    h_d_id   SMALLINT      NOT NULL,
    h_w_id   INTEGER       NOT NULL,
    h_date   TIMESTAMP     NOT NULL,
    h_amount NUMERIC(6,2)  NOT NULL,
    h_data   VARCHAR(24)   NOT NULL
);

CREATE TABLE orders (
    o_id         INTEGER   NOT NULL,
    o_d_id       SMALLINT  NOT NULL,
    o_w_id       INTEGER   NOT NULL,
    o_c_id       INTEGER   NOT NULL,
    o_entry_d    TIMESTAMP NOT NULL,
    o_carrier_id SMALLINT,
    o_ol_cnt     SMALLINT  NOT NULL,
    o_all_local  SMALLINT  NOT NULL,
    PRIMARY KEY (o_w_id, o_d_id, o_id)
);

CREATE TABLE new_order (
    no_o_id INTEGER  NOT NULL,
    no_d_id SMALLINT NOT NULL,
    no_w_id INTEGER  NOT NULL,
    PRIMARY KEY (no_w_id, no_d_id, no_o_id)
);

CREATE TABLE order_line (
    ol_o_id        INTEGER      NOT NULL,
    ol_d_id        SMALLINT     NOT NULL,
    ol_w_id        INTEGER      NOT NULL,
    ol_number      SMALLINT     NOT NULL,
    ol_i_id        INTEGER      NOT NULL,
    ol_supply_w_id INTEGER      NOT NULL,
    ol_delivery_d  TIMESTAMP,
    ol_quantity    SMALLINT     NOT NULL,
    ol_amount      NUMERIC(6,2) NOT NULL,
    ol_dist_info   CHAR(24)     NOT NULL,
    PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
);

CREATE TABLE item (
    i_id    INTEGER      NOT NULL,
    i_im_id INTEGER      NOT NULL,
    i_name  VARCHAR(24)  NOT NULL,
    i_price NUMERIC(5,2) NOT NULL,
    i_data  VARCHAR(50)  NOT NULL,
    PRIMARY KEY (i_id)
);

-- S_QUANTITY, S_YTD, S_ORDER_CNT and S_REMOTE_CNT, the four columns New-Order updates,
-- side by side: PostgreSQL logs an update as the bytes from the first to the last that
-- changed, so this keeps it to these 16 (with alignment) rather than the 250 of the S_DIST_xx between them.
CREATE TABLE stock (
    s_i_id       INTEGER      NOT NULL,
    s_w_id       INTEGER      NOT NULL,
    s_quantity   SMALLINT     NOT NULL,
    s_ytd        INTEGER      NOT NULL,
    s_order_cnt  INTEGER      NOT NULL,
    s_remote_cnt INTEGER      NOT NULL,
    s_dist_01    CHAR(24)     NOT NULL,
    s_dist_02    CHAR(24)     NOT NULL,
    s_dist_03    CHAR(24)     NOT NULL,
    s_dist_04    CHAR(24)     NOT NULL,
    s_dist_05    CHAR(24)     NOT NULL,
    s_dist_06    CHAR(24)     NOT NULL,
    s_dist_07    CHAR(24)     NOT NULL,
    s_dist_08    CHAR(24)     NOT NULL,
    s_dist_09    CHAR(24)     NOT NULL,
    s_dist_10    CHAR(24)     NOT NULL,
    s_data       VARCHAR(50)  NOT NULL,
    PRIMARY KEY (s_w_id, s_i_id)
);

-- indexes
CREATE INDEX customer_by_last_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);

-- procedures (one function per transaction; the driver draws every input and calls it)

-- New-Order (clause 2.4.2): the district's next O_ID, the customer and warehouse, ORDER
-- and NEW-ORDER; then each line's stock row updated with the quantity rule, the rows
-- taken in key order (supply warehouse, item) so that two concurrent orders never wait
-- on each other's rows in opposite orders (a deadlock costs deadlock_timeout); an item
-- on two lines is updated twice, as the rules' line-by-line form does. Then one
-- statement reads every line's item, inserts the order lines and totals them. Set-based
-- where the rules allow it: 6 statements and one UPDATE per line, not 5 and three per
-- line, and no separate locking pass (a row lock is a WAL record and a dirtied page of
-- its own before the UPDATE writes the row). The unused item of the 1% rollback has no
-- ITEM row: after every other line's work is done (clause 2.4.2.3) it raises SQLSTATE
-- TPCC1, and the server rolls the whole call back. Returns what the driver shows: O_ID,
-- C_LAST, C_CREDIT, the brand-generic flags, sum(OL_AMOUNT), C_DISCOUNT, W_TAX, D_TAX.
CREATE FUNCTION tpcc_new_order(
    p_w_id INTEGER, p_d_id INTEGER, p_c_id INTEGER, p_all_local INTEGER,
    p_i_ids INTEGER[], p_supply_w_ids INTEGER[], p_quantities INTEGER[],
    OUT out_o_id INTEGER, OUT out_c_last VARCHAR, OUT out_c_credit CHAR(2), OUT out_brands TEXT,
    OUT out_amount NUMERIC, OUT out_c_discount NUMERIC, OUT out_w_tax NUMERIC, OUT out_d_tax NUMERIC)
LANGUAGE plpgsql AS $$
DECLARE
    v_lines INTEGER := cardinality(p_i_ids);
    v_s_data VARCHAR[] := array_fill(NULL::VARCHAR, ARRAY[v_lines]);
    v_dists CHAR(24)[] := array_fill(NULL::CHAR(24), ARRAY[v_lines]);
    v_s VARCHAR;
    v_dist CHAR(24);
    v_n INTEGER;
    v_items INTEGER;
    v_stocked INTEGER;
BEGIN
    UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id
        RETURNING d_next_o_id - 1, d_tax INTO out_o_id, out_d_tax;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'New-Order: no district (%, %)', p_w_id, p_d_id;
    END IF;
    SELECT c_discount, c_last, c_credit, w_tax INTO out_c_discount, out_c_last, out_c_credit, out_w_tax
        FROM customer, warehouse WHERE w_id = p_w_id AND c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'New-Order: no customer % in district (%, %)', p_c_id, p_w_id, p_d_id;
    END IF;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        VALUES (out_o_id, p_d_id, p_w_id, p_c_id, CURRENT_TIMESTAMP, NULL, v_lines, p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (out_o_id, p_d_id, p_w_id);
    FOR v_n IN SELECT l.n FROM unnest(p_supply_w_ids, p_i_ids) WITH ORDINALITY AS l(w_id, i_id, n)
               ORDER BY l.w_id, l.i_id, l.n LOOP
        UPDATE stock SET
            s_quantity = CASE WHEN s_quantity - p_quantities[v_n] >= 10 THEN s_quantity - p_quantities[v_n]
                              ELSE s_quantity - p_quantities[v_n] + 91 END,
            s_ytd = s_ytd + p_quantities[v_n],
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN p_supply_w_ids[v_n] = p_w_id THEN 0 ELSE 1 END
        WHERE s_w_id = p_supply_w_ids[v_n] AND s_i_id = p_i_ids[v_n]
        RETURNING s_data, CASE p_d_id
                WHEN 1 THEN s_dist_01
                WHEN 2 THEN s_dist_02
                WHEN 3 THEN s_dist_03
                WHEN 4 THEN s_dist_04
                WHEN 5 THEN s_dist_05
                WHEN 6 THEN s_dist_06
                WHEN 7 THEN s_dist_07
                WHEN 8 THEN s_dist_08
                WHEN 9 THEN s_dist_09
                WHEN 10 THEN s_dist_10
            END INTO v_s, v_dist;
        v_s_data[v_n] := v_s;
        v_dists[v_n] := v_dist;
    END LOOP;
    WITH line AS (
        SELECT l.n, l.i_id, l.w_id, l.qty, l.dist, l.qty * item.i_price AS amount,
               CASE WHEN item.i_data LIKE '%ORIGINAL%' AND l.s_data LIKE '%ORIGINAL%' THEN 'B' ELSE 'G' END AS brand
        FROM unnest(p_i_ids, p_supply_w_ids, p_quantities, v_dists, v_s_data) WITH ORDINALITY
             AS l(i_id, w_id, qty, dist, s_data, n)
        LEFT JOIN item ON item.i_id = l.i_id),
    inserted AS (
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
        SELECT out_o_id, p_d_id, p_w_id, n, i_id, w_id, NULL, qty, amount, dist FROM line
        WHERE amount IS NOT NULL AND dist IS NOT NULL)
    SELECT count(amount), count(dist), sum(amount), string_agg(brand, '' ORDER BY n)
        INTO v_items, v_stocked, out_amount, out_brands FROM line;
    IF v_items < v_lines THEN
        RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = 'TPCC1';
    END IF;
    IF v_stocked < v_lines THEN
        RAISE EXCEPTION 'New-Order: a line''s item has no stock row in its supply warehouse';
    END IF;
END
$$
//

-- Payment (clause 2.5.2): warehouse, district and customer totals, then HISTORY. By last
-- name (p_c_id NULL) the customer is row ceil(n/2) of the n namesakes ordered by
-- C_FIRST (clause 2.5.2.2), found in one read of them (not a count, then the row). A bad-credit customer gets "C_ID C_D_ID C_W_ID D_ID W_ID
-- H_AMOUNT" prepended to C_DATA, kept to 500 characters. Returns C_ID, C_CREDIT and the
-- new C_BALANCE.
CREATE FUNCTION tpcc_payment(
    p_w_id INTEGER, p_d_id INTEGER, p_c_w_id INTEGER, p_c_d_id INTEGER, p_c_id INTEGER, p_c_last VARCHAR,
    p_h_amount NUMERIC,
    OUT out_c_id INTEGER, OUT out_c_credit CHAR(2), OUT out_c_balance NUMERIC)
LANGUAGE plpgsql AS $$
DECLARE
    v_w_name VARCHAR;
    v_d_name VARCHAR;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_h_amount WHERE w_id = p_w_id RETURNING w_name INTO v_w_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Payment: no warehouse %', p_w_id;
    END IF;
    UPDATE district SET d_ytd = d_ytd + p_h_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
        RETURNING d_name INTO v_d_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Payment: no district (%, %)', p_w_id, p_d_id;
    END IF;
    out_c_id := p_c_id;
    IF p_c_id IS NULL THEN
        SELECT (array_agg(c_id ORDER BY c_first))[(count(*) + 1) / 2] INTO out_c_id FROM customer
            WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last;
    END IF;
    UPDATE customer SET
        c_balance = c_balance - p_h_amount,
        c_ytd_payment = c_ytd_payment + p_h_amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = CASE WHEN c_credit = 'BC'
                      THEN substring(concat_ws(' ', c_id, c_d_id, c_w_id, p_d_id, p_w_id, p_h_amount, c_data) FOR 500)
                      ELSE c_data END
    WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = out_c_id
    RETURNING c_credit, c_balance INTO out_c_credit, out_c_balance;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Payment: no customer % in district (%, %)', coalesce(p_c_id::text, p_c_last), p_c_w_id, p_c_d_id;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (out_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, CURRENT_TIMESTAMP, p_h_amount,
                v_w_name || '    ' || v_d_name);
END
$$
//

-- Delivery (clause 2.7.4): each of the ten districts' oldest NEW-ORDER row deleted, in
-- district order (a concurrent Delivery that took it first makes this one wait for its
-- end and then take the next oldest, as a locking read would, without the lock's own
-- WAL record); then one statement for the whole warehouse sets the orders' carrier and
-- their lines' delivery date, and adds each order's sum of OL_AMOUNT to its customer's
-- balance with C_DELIVERY_CNT + 1: 11 statements rather than 50. Returns the delivered
-- O_IDs by district, comma-separated, 0 for a district skipped because it had no
-- undelivered order.
CREATE FUNCTION tpcc_delivery(p_w_id INTEGER, p_o_carrier_id INTEGER, OUT out_o_ids TEXT)
LANGUAGE plpgsql AS $$
DECLARE
    v_o_id INTEGER;
    v_d_ids INTEGER[] := '{}';
    v_o_ids INTEGER[] := '{}';
    v_delivered INTEGER[] := array_fill(0, ARRAY[10]);
BEGIN
    FOR v_d_id IN 1 .. 10 LOOP
        LOOP
            DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id AND no_o_id =
                (SELECT min(no_o_id) FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id)
                RETURNING no_o_id INTO v_o_id;
            -- not found: none left, or a concurrent Delivery took that one (then look again)
            EXIT WHEN FOUND OR NOT EXISTS (SELECT 1 FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id);
        END LOOP;
        IF FOUND THEN
            v_d_ids := v_d_ids || v_d_id;
            v_o_ids := v_o_ids || v_o_id;
            v_delivered[v_d_id] := v_o_id;
        END IF;
    END LOOP;
    WITH carried AS (
        UPDATE orders SET o_carrier_id = p_o_carrier_id FROM unnest(v_d_ids, v_o_ids) AS k(d, o)
        WHERE o_w_id = p_w_id AND o_d_id = k.d AND o_id = k.o RETURNING o_d_id, o_c_id),
    lines AS (
        UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP FROM unnest(v_d_ids, v_o_ids) AS k(d, o)
        WHERE ol_w_id = p_w_id AND ol_d_id = k.d AND ol_o_id = k.o RETURNING ol_d_id, ol_amount),
    totals AS (
        SELECT ol_d_id, sum(ol_amount) AS amount FROM lines GROUP BY ol_d_id)
    UPDATE customer SET c_balance = c_balance + totals.amount, c_delivery_cnt = c_delivery_cnt + 1
        FROM carried JOIN totals ON totals.ol_d_id = carried.o_d_id
        WHERE c_w_id = p_w_id AND c_d_id = carried.o_d_id AND c_id = carried.o_c_id;
    out_o_ids := array_to_string(v_delivered, ',');
END
$$
//
