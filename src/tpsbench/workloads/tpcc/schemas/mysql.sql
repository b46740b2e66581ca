-- TPC-C-like schema for MySQL 8 and MariaDB (InnoDB): nine tables, their primary keys,
-- and the two secondary indexes the transactions need. Money is DECIMAL (exact).
-- DATETIME rather than TIMESTAMP: no 2038 limit, no time-zone conversion, and no
-- automatic DEFAULT/ON UPDATE on servers that still have explicit_defaults_for_timestamp off.
-- InnoDB clusters rows by primary key, which is the access path of every transaction.
-- Statements after the "-- indexes" marker are run by the loader after the data is in.
-- After "-- procedures": the transactions as stored procedures (run option
-- procedures=on), each ended by a line "//"; a run installs them before its first step.

CREATE TABLE warehouse (
    w_id        INTEGER       NOT NULL,
    w_name      VARCHAR(10)   NOT NULL,
    w_street_1  VARCHAR(20)   NOT NULL,
    w_street_2  VARCHAR(20)   NOT NULL,
    w_city      VARCHAR(20)   NOT NULL,
    w_state     CHAR(2)       NOT NULL,
    w_zip       CHAR(9)       NOT NULL,
    w_tax       DECIMAL(4,4)  NOT NULL,
    w_ytd       DECIMAL(12,2) NOT NULL,
    PRIMARY KEY (w_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE district (
    d_id        SMALLINT      NOT NULL,
    d_w_id      INTEGER       NOT NULL,
    d_name      VARCHAR(10)   NOT NULL,
    d_street_1  VARCHAR(20)   NOT NULL,
    d_street_2  VARCHAR(20)   NOT NULL,
    d_city      VARCHAR(20)   NOT NULL,
    d_state     CHAR(2)       NOT NULL,
    d_zip       CHAR(9)       NOT NULL,
    d_tax       DECIMAL(4,4)  NOT NULL,
    d_ytd       DECIMAL(12,2) NOT NULL,
    d_next_o_id INTEGER       NOT NULL,
    PRIMARY KEY (d_w_id, d_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

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
    c_since        DATETIME     NOT NULL,
    c_credit       CHAR(2)       NOT NULL,
    c_credit_lim   DECIMAL(12,2) NOT NULL,
    c_discount     DECIMAL(4,4)  NOT NULL,
    c_balance      DECIMAL(12,2) NOT NULL,
    c_ytd_payment  DECIMAL(12,2) NOT NULL,
    c_payment_cnt  INTEGER       NOT NULL,
    c_delivery_cnt INTEGER       NOT NULL,
    c_data         VARCHAR(500)  NOT NULL,
    PRIMARY KEY (c_w_id, c_d_id, c_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE history (
    h_c_id   INTEGER       NOT NULL,
    h_c_d_id SMALLINT      NOT NULL,
    h_c_w_id INTEGER       NOT NULL,
    h_d_id   SMALLINT      NOT NULL,
    h_w_id   INTEGER       NOT NULL,
    h_date   DATETIME     NOT NULL,
    h_amount DECIMAL(6,2)  NOT NULL,
    h_data   VARCHAR(24)   NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE orders (
    o_id         INTEGER   NOT NULL,
    o_d_id       SMALLINT  NOT NULL,
    o_w_id       INTEGER   NOT NULL,
    o_c_id       INTEGER   NOT NULL,
    o_entry_d    DATETIME NOT NULL,
    o_carrier_id SMALLINT,
    o_ol_cnt     SMALLINT  NOT NULL,
    o_all_local  SMALLINT  NOT NULL,
    PRIMARY KEY (o_w_id, o_d_id, o_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE new_order (
    no_o_id INTEGER  NOT NULL,
    no_d_id SMALLINT NOT NULL,
    no_w_id INTEGER  NOT NULL,
    PRIMARY KEY (no_w_id, no_d_id, no_o_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE order_line (
    ol_o_id        INTEGER      NOT NULL,
    ol_d_id        SMALLINT     NOT NULL,
    ol_w_id        INTEGER      NOT NULL,
    ol_number      SMALLINT     NOT NULL,
    ol_i_id        INTEGER      NOT NULL,
    ol_supply_w_id INTEGER      NOT NULL,
    ol_delivery_d  DATETIME,
    ol_quantity    SMALLINT     NOT NULL,
    ol_amount      DECIMAL(6,2) NOT NULL,
    ol_dist_info   CHAR(24)     NOT NULL,
    PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE item (
    i_id    INTEGER      NOT NULL,
    i_im_id INTEGER      NOT NULL,
    i_name  VARCHAR(24)  NOT NULL,
    i_price DECIMAL(5,2) NOT NULL,
    i_data  VARCHAR(50)  NOT NULL,
    PRIMARY KEY (i_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The four columns New-Order updates side by side (postgresql.sql says why).
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
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- indexes
CREATE INDEX customer_by_last_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);

-- procedures (one per transaction; the driver draws every input and CALLs it)
-- Each opens and ends its own transaction (the caller is in autocommit mode, where
-- every statement of a procedure would otherwise commit on its own) and rolls it back
-- on any error before passing the error on (RESIGNAL), so a deadlock reaches the driver
-- as 1213 and is retried. Lists of line values arrive as comma-separated text: MySQL
-- has no array parameters. Each ends with one result row for the driver.

-- New-Order (clause 2.4.2): the lines in line order, each reading its item, locking and
-- updating its stock row (quantity rule) and inserting its order line. The unused item
-- of the 1% rollback rolls the transaction back and returns a row with a NULL O_ID.
-- Returns O_ID, C_LAST, C_CREDIT, the brand-generic flags, sum(OL_AMOUNT), C_DISCOUNT,
-- W_TAX, D_TAX.
CREATE PROCEDURE tpcc_new_order(
    IN p_w_id INT, IN p_d_id INT, IN p_c_id INT, IN p_all_local INT,
    IN p_i_ids VARCHAR(255), IN p_supply_w_ids VARCHAR(255), IN p_quantities VARCHAR(255))
new_order: BEGIN
    DECLARE v_ol_cnt INT DEFAULT 1 + LENGTH(p_i_ids) - LENGTH(REPLACE(p_i_ids, ',', ''));
    DECLARE v_n INT DEFAULT 1;
    DECLARE v_o_id, v_i_id, v_sw_id, v_qty, v_s_qty INT;
    DECLARE v_d_tax, v_w_tax, v_discount DECIMAL(4,4);
    DECLARE v_price DECIMAL(5,2);
    DECLARE v_line_amount DECIMAL(6,2);
    DECLARE v_amount DECIMAL(12,2) DEFAULT 0;
    DECLARE v_c_last VARCHAR(16);
    DECLARE v_c_credit CHAR(2);
    DECLARE v_i_data, v_s_data VARCHAR(50);
    DECLARE v_dist CHAR(24);
    DECLARE v_brands VARCHAR(15) DEFAULT '';
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
    IF v_o_id IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'New-Order: no such district';
    END IF;
    SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_c_last, v_c_credit, v_w_tax
        FROM customer, warehouse WHERE w_id = p_w_id AND c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
    IF v_c_last IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'New-Order: no such customer';
    END IF;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        VALUES (v_o_id, p_d_id, p_w_id, p_c_id, NOW(), NULL, v_ol_cnt, p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
    WHILE v_n <= v_ol_cnt DO
        SET v_i_id = SUBSTRING_INDEX(SUBSTRING_INDEX(p_i_ids, ',', v_n), ',', -1);
        SET v_sw_id = SUBSTRING_INDEX(SUBSTRING_INDEX(p_supply_w_ids, ',', v_n), ',', -1);
        SET v_qty = SUBSTRING_INDEX(SUBSTRING_INDEX(p_quantities, ',', v_n), ',', -1);
        SET v_price = NULL, v_s_qty = NULL;
        SELECT i_price, i_data INTO v_price, v_i_data FROM item WHERE i_id = v_i_id;
        IF v_price IS NULL THEN
            ROLLBACK;
            SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL;
            LEAVE new_order;
        END IF;
        SELECT s_quantity, s_data, CASE p_d_id
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
            END INTO v_s_qty, v_s_data, v_dist
            FROM stock WHERE s_w_id = v_sw_id AND s_i_id = v_i_id FOR UPDATE;
        IF v_s_qty IS NULL THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'New-Order: no such stock row';
        END IF;
        UPDATE stock SET
            s_quantity = IF(v_s_qty - v_qty >= 10, v_s_qty - v_qty, v_s_qty - v_qty + 91),
            s_ytd = s_ytd + v_qty,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + IF(v_sw_id = p_w_id, 0, 1)
        WHERE s_w_id = v_sw_id AND s_i_id = v_i_id;
        SET v_line_amount = v_qty * v_price;
        SET v_amount = v_amount + v_line_amount;
        SET v_brands = CONCAT(v_brands,
            IF(INSTR(v_i_data, 'ORIGINAL') > 0 AND INSTR(v_s_data, 'ORIGINAL') > 0, 'B', 'G'));
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
            VALUES (v_o_id, p_d_id, p_w_id, v_n, v_i_id, v_sw_id, NULL, v_qty, v_line_amount, v_dist);
        SET v_n = v_n + 1;
    END WHILE;
    COMMIT;
    SELECT v_o_id, v_c_last, v_c_credit, v_brands, v_amount, v_discount, v_w_tax, v_d_tax;
END
//

-- Payment (clause 2.5.2): warehouse, district and customer totals, then HISTORY. By last
-- name (p_c_id NULL) the customer is row ceil(n/2) of the n namesakes ordered by
-- C_FIRST (clause 2.5.2.2). A bad-credit customer gets "C_ID C_D_ID C_W_ID D_ID W_ID
-- H_AMOUNT" prepended to C_DATA, kept to 500 characters. Returns C_ID, C_CREDIT and the
-- new C_BALANCE.
CREATE PROCEDURE tpcc_payment(
    IN p_w_id INT, IN p_d_id INT, IN p_c_w_id INT, IN p_c_d_id INT, IN p_c_id INT, IN p_c_last VARCHAR(16),
    IN p_h_amount DECIMAL(6,2))
BEGIN
    DECLARE v_w_name, v_d_name VARCHAR(10);
    DECLARE v_namesakes, v_offset INT;
    DECLARE v_c_id INT DEFAULT p_c_id;
    DECLARE v_c_credit CHAR(2);
    DECLARE v_c_balance DECIMAL(12,2);
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    UPDATE warehouse SET w_ytd = w_ytd + p_h_amount WHERE w_id = p_w_id;
    SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w_id;
    UPDATE district SET d_ytd = d_ytd + p_h_amount WHERE d_w_id = p_w_id AND d_id = p_d_id;
    SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
    IF v_w_name IS NULL OR v_d_name IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Payment: no such warehouse or district';
    END IF;
    IF v_c_id IS NULL THEN
        SELECT COUNT(*) INTO v_namesakes FROM customer
            WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last;
        SET v_offset = GREATEST(v_namesakes - 1, 0) DIV 2;
        SELECT c_id INTO v_c_id FROM customer
            WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = p_c_last
            ORDER BY c_first LIMIT v_offset, 1;
    END IF;
    SELECT c_credit, c_balance INTO v_c_credit, v_c_balance FROM customer
        WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id FOR UPDATE;
    IF v_c_credit IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Payment: no such customer';
    END IF;
    UPDATE customer SET
        c_balance = c_balance - p_h_amount,
        c_ytd_payment = c_ytd_payment + p_h_amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = IF(c_credit = 'BC',
                    SUBSTRING(CONCAT_WS(' ', c_id, c_d_id, c_w_id, p_d_id, p_w_id, p_h_amount, c_data), 1, 500),
                    c_data)
    WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, NOW(), p_h_amount, CONCAT(v_w_name, '    ', v_d_name));
    COMMIT;
    SELECT v_c_id, v_c_credit, v_c_balance - p_h_amount;
END
//

-- Delivery (clause 2.7.4): the ten districts in order, each its oldest NEW-ORDER row
-- (a locking read), deleted; the order's carrier; its lines' delivery date; the sum of
-- their amounts onto the customer's balance. Returns the delivered O_IDs by district,
-- comma-separated, 0 for a district skipped because it had no undelivered order.
CREATE PROCEDURE tpcc_delivery(IN p_w_id INT, IN p_o_carrier_id INT)
BEGIN
    DECLARE v_d_id INT DEFAULT 1;
    DECLARE v_o_id, v_c_id INT;
    DECLARE v_amount DECIMAL(12,2);
    DECLARE v_delivered VARCHAR(255) DEFAULT '';
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    WHILE v_d_id <= 10 DO
        SET v_o_id = NULL;
        SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id
            ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF v_o_id IS NOT NULL THEN
            DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id AND no_o_id = v_o_id;
            SELECT o_c_id INTO v_c_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = v_d_id AND o_id = v_o_id FOR UPDATE;
            UPDATE orders SET o_carrier_id = p_o_carrier_id WHERE o_w_id = p_w_id AND o_d_id = v_d_id AND o_id = v_o_id;
            UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = p_w_id AND ol_d_id = v_d_id AND ol_o_id = v_o_id;
            SELECT SUM(ol_amount) INTO v_amount FROM order_line
                WHERE ol_w_id = p_w_id AND ol_d_id = v_d_id AND ol_o_id = v_o_id;
            UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
                WHERE c_w_id = p_w_id AND c_d_id = v_d_id AND c_id = v_c_id;
        END IF;
        SET v_delivered = CONCAT(v_delivered, IF(v_d_id > 1, ',', ''), IFNULL(v_o_id, 0));
        SET v_d_id = v_d_id + 1;
    END WHILE;
    COMMIT;
    SELECT v_delivered;
END
//
