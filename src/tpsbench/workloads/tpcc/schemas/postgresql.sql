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

CREATE TABLE stock (
    s_i_id       INTEGER      NOT NULL,
    s_w_id       INTEGER      NOT NULL,
    s_quantity   SMALLINT     NOT NULL,
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
    s_ytd        INTEGER      NOT NULL,
    s_order_cnt  INTEGER      NOT NULL,
    s_remote_cnt INTEGER      NOT NULL,
    s_data       VARCHAR(50)  NOT NULL,
    PRIMARY KEY (s_w_id, s_i_id)
);

-- indexes
CREATE INDEX customer_by_last_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);

-- procedures (one function per transaction; the driver draws every input and calls it)

-- New-Order (clause 2.4.2): the lines in line order. The stock rows are locked first,
-- in key order, so that two concurrent orders never wait on each other's rows in
-- opposite orders (a deadlock costs deadlock_timeout); then each line reads its item,
-- updates its stock row with the quantity rule and inserts its order line. The unused
-- item of the 1% rollback raises SQLSTATE TPCC1: the call fails and, sent in autocommit,
-- its whole transaction is rolled back by the server. Returns what the driver shows:
-- O_ID, C_LAST, C_CREDIT, the brand-generic flags, sum(OL_AMOUNT), C_DISCOUNT, W_TAX, D_TAX.
CREATE FUNCTION tpcc_new_order(
    p_w_id INTEGER, p_d_id INTEGER, p_c_id INTEGER, p_all_local INTEGER,
    p_i_ids INTEGER[], p_supply_w_ids INTEGER[], p_quantities INTEGER[],
    OUT out_o_id INTEGER, OUT out_c_last VARCHAR, OUT out_c_credit CHAR(2), OUT out_brands TEXT,
    OUT out_amount NUMERIC, OUT out_c_discount NUMERIC, OUT out_w_tax NUMERIC, OUT out_d_tax NUMERIC)
LANGUAGE plpgsql AS $$
DECLARE
    v_price NUMERIC;
    v_i_data VARCHAR;
    v_s_data VARCHAR;
    v_dist CHAR(24);
    v_line_amount NUMERIC;
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
        VALUES (out_o_id, p_d_id, p_w_id, p_c_id, CURRENT_TIMESTAMP, NULL, cardinality(p_i_ids), p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (out_o_id, p_d_id, p_w_id);
    PERFORM 1 FROM stock WHERE (s_w_id, s_i_id) IN (SELECT * FROM unnest(p_supply_w_ids, p_i_ids))
        ORDER BY s_w_id, s_i_id FOR UPDATE;
    out_brands := '';
    out_amount := 0;
    FOR n IN 1 .. cardinality(p_i_ids) LOOP
        SELECT i_price, i_data INTO v_price, v_i_data FROM item WHERE i_id = p_i_ids[n];
        IF NOT FOUND THEN
            RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = 'TPCC1';
        END IF;
        UPDATE stock SET
            s_quantity = CASE WHEN s_quantity - p_quantities[n] >= 10 THEN s_quantity - p_quantities[n]
                              ELSE s_quantity - p_quantities[n] + 91 END,
            s_ytd = s_ytd + p_quantities[n],
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN p_supply_w_ids[n] = p_w_id THEN 0 ELSE 1 END
        WHERE s_w_id = p_supply_w_ids[n] AND s_i_id = p_i_ids[n]
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
            END INTO v_s_data, v_dist;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'New-Order: no stock row for item % in warehouse %', p_i_ids[n], p_supply_w_ids[n];
        END IF;
        v_line_amount := p_quantities[n] * v_price;
        out_amount := out_amount + v_line_amount;
        out_brands := out_brands
            || CASE WHEN v_i_data LIKE '%ORIGINAL%' AND v_s_data LIKE '%ORIGINAL%' THEN 'B' ELSE 'G' END;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
            VALUES (out_o_id, p_d_id, p_w_id, n, p_i_ids[n], p_supply_w_ids[n], NULL, p_quantities[n],
                    v_line_amount, v_dist);
    END LOOP;
END
$$
//

-- Payment (clause 2.5.2): warehouse, district and customer totals, then HISTORY. By last
-- name (p_c_id NULL) the customer is row ceil(n/2) of the n namesakes ordered by
-- C_FIRST (clause 2.5.2.2). A bad-credit customer gets "C_ID C_D_ID C_W_ID D_ID W_ID
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
    v_namesakes INTEGER;
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
        SELECT count(*) INTO v_namesakes FROM customer
            WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last;
        SELECT c_id INTO out_c_id FROM customer
            WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last
            ORDER BY c_first OFFSET (v_namesakes - 1) / 2 LIMIT 1;
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

-- Delivery (clause 2.7.4): the ten districts in order, each its oldest NEW-ORDER row
-- (a locking read: it waits for a concurrent Delivery holding that row and then takes
-- the next one), deleted; the order's carrier; its lines' delivery date; the sum of
-- their amounts onto the customer's balance. Returns the delivered O_IDs by district,
-- comma-separated, 0 for a district skipped because it had no undelivered order.
CREATE FUNCTION tpcc_delivery(p_w_id INTEGER, p_o_carrier_id INTEGER, OUT out_o_ids TEXT)
LANGUAGE plpgsql AS $$
DECLARE
    v_o_id INTEGER;
    v_c_id INTEGER;
    v_amount NUMERIC;
    v_delivered INTEGER[] := '{}';
BEGIN
    FOR v_d_id IN 1 .. 10 LOOP
        SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id
            ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF NOT FOUND THEN
            v_delivered := v_delivered || 0;
            CONTINUE;
        END IF;
        DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id AND no_o_id = v_o_id;
        UPDATE orders SET o_carrier_id = p_o_carrier_id WHERE o_w_id = p_w_id AND o_d_id = v_d_id AND o_id = v_o_id
            RETURNING o_c_id INTO v_c_id;
        WITH delivered AS (
            UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP
            WHERE ol_w_id = p_w_id AND ol_d_id = v_d_id AND ol_o_id = v_o_id RETURNING ol_amount)
        SELECT sum(ol_amount) INTO v_amount FROM delivered;
        UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
            WHERE c_w_id = p_w_id AND c_d_id = v_d_id AND c_id = v_c_id;
        v_delivered := v_delivered || v_o_id;
    END LOOP;
    out_o_ids := array_to_string(v_delivered, ',');
END
$$
//
