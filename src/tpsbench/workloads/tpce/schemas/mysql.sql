-- TPC-E-like schema for MySQL 8 and MariaDB (InnoDB): the 33 tables of TPC-E with its
-- table and column names in lower case, their primary keys, and the secondary indexes the
-- transactions need (postgresql.sql lists which transaction uses which). Ids are BIGINT,
-- money DECIMAL (exact), TPC-E's BOOLEAN columns SMALLINT 0/1, NEWS_ITEM's LOB LONGTEXT.
-- DATETIME rather than TIMESTAMP: no 2038 limit, no time-zone conversion, and no
-- automatic DEFAULT/ON UPDATE on servers that still have explicit_defaults_for_timestamp off.
-- InnoDB clusters rows by primary key: TRADE by id, DAILY_MARKET by symbol and date.
-- Statements after the "-- indexes" marker are run by the loader after the data is in.
-- Routines after "-- procedures" (the run option procedures), each ended by a line "//";
-- a run installs them before its first step.

CREATE TABLE status_type (
    st_id   CHAR(4)  NOT NULL,
    st_name CHAR(10) NOT NULL,
    PRIMARY KEY (st_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trade_type (
    tt_id      CHAR(3)     NOT NULL,
    tt_name    VARCHAR(12) NOT NULL,
    tt_is_sell SMALLINT    NOT NULL,
    tt_is_mrkt SMALLINT    NOT NULL,
    PRIMARY KEY (tt_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE exchange (
    ex_id       CHAR(6)       NOT NULL,
    ex_name     VARCHAR(100)  NOT NULL,
    ex_num_symb INTEGER       NOT NULL,
    ex_open     SMALLINT      NOT NULL,
    ex_close    SMALLINT      NOT NULL,
    ex_desc     VARCHAR(150),
    ex_ad_id    BIGINT        NOT NULL,
    PRIMARY KEY (ex_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE sector (
    sc_id   CHAR(2)     NOT NULL,
    sc_name VARCHAR(30) NOT NULL,
    PRIMARY KEY (sc_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE industry (
    in_id    CHAR(2)     NOT NULL,
    in_name  VARCHAR(50) NOT NULL,
    in_sc_id CHAR(2)     NOT NULL,
    PRIMARY KEY (in_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE zip_code (
    zc_code CHAR(12)    NOT NULL,
    zc_town VARCHAR(80) NOT NULL,
    zc_div  VARCHAR(80) NOT NULL,
    PRIMARY KEY (zc_code)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE address (
    ad_id      BIGINT       NOT NULL,
    ad_line1   VARCHAR(80),
    ad_line2   VARCHAR(80),
    ad_zc_code CHAR(12)     NOT NULL,
    ad_ctry    VARCHAR(80),
    PRIMARY KEY (ad_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE taxrate (
    tx_id   CHAR(4)      NOT NULL,
    tx_name VARCHAR(50)  NOT NULL,
    tx_rate DECIMAL(6,5) NOT NULL,
    PRIMARY KEY (tx_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE charge (
    ch_tt_id  CHAR(3)       NOT NULL,
    ch_c_tier SMALLINT      NOT NULL,
    ch_chrg   DECIMAL(10,2) NOT NULL,
    PRIMARY KEY (ch_tt_id, ch_c_tier)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE commission_rate (
    cr_c_tier   SMALLINT     NOT NULL,
    cr_tt_id    CHAR(3)      NOT NULL,
    cr_ex_id    CHAR(6)      NOT NULL,
    cr_from_qty INTEGER      NOT NULL,
    cr_to_qty   INTEGER      NOT NULL,
    cr_rate     DECIMAL(5,2) NOT NULL,
    PRIMARY KEY (cr_c_tier, cr_tt_id, cr_ex_id, cr_from_qty)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE company (
    co_id        BIGINT       NOT NULL,
    co_st_id     CHAR(4)      NOT NULL,
    co_name      VARCHAR(60)  NOT NULL,
    co_in_id     CHAR(2)      NOT NULL,
    co_sp_rate   CHAR(4)      NOT NULL,
    co_ceo       VARCHAR(46)  NOT NULL,
    co_ad_id     BIGINT       NOT NULL,
    co_desc      VARCHAR(150) NOT NULL,
    co_open_date DATE         NOT NULL,
    PRIMARY KEY (co_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE company_competitor (
    cp_co_id      BIGINT  NOT NULL,
    cp_comp_co_id BIGINT  NOT NULL,
    cp_in_id      CHAR(2) NOT NULL,
    PRIMARY KEY (cp_co_id, cp_comp_co_id, cp_in_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE security (
    s_symb           CHAR(15)      NOT NULL,
    s_issue          CHAR(6)       NOT NULL,
    s_st_id          CHAR(4)       NOT NULL,
    s_name           VARCHAR(70)   NOT NULL,
    s_ex_id          CHAR(6)       NOT NULL,
    s_co_id          BIGINT        NOT NULL,
    s_num_out        BIGINT        NOT NULL,
    s_start_date     DATE          NOT NULL,
    s_exch_date      DATE          NOT NULL,
    s_pe             DECIMAL(10,2) NOT NULL,
    s_52wk_high      DECIMAL(8,2)  NOT NULL,
    s_52wk_high_date DATE          NOT NULL,
    s_52wk_low       DECIMAL(8,2)  NOT NULL,
    s_52wk_low_date  DATE          NOT NULL,
    s_dividend       DECIMAL(10,2) NOT NULL,
    s_yield          DECIMAL(5,2)  NOT NULL,
    PRIMARY KEY (s_symb)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE daily_market (
    dm_date   DATE         NOT NULL,
    dm_s_symb CHAR(15)     NOT NULL,
    dm_close  DECIMAL(8,2) NOT NULL,
    dm_high   DECIMAL(8,2) NOT NULL,
    dm_low    DECIMAL(8,2) NOT NULL,
    dm_vol    BIGINT       NOT NULL,
    PRIMARY KEY (dm_s_symb, dm_date)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE financial (
    fi_co_id          BIGINT        NOT NULL,
    fi_year           SMALLINT      NOT NULL,
    fi_qtr            SMALLINT      NOT NULL,
    fi_qtr_start_date DATE          NOT NULL,
    fi_revenue        DECIMAL(15,2) NOT NULL,
    fi_net_earn       DECIMAL(15,2) NOT NULL,
    fi_basic_eps      DECIMAL(10,2) NOT NULL,
    fi_dilut_eps      DECIMAL(10,2) NOT NULL,
    fi_margin         DECIMAL(10,2) NOT NULL,
    fi_inventory      DECIMAL(15,2) NOT NULL,
    fi_assets         DECIMAL(15,2) NOT NULL,
    fi_liability      DECIMAL(15,2) NOT NULL,
    fi_out_basic      BIGINT        NOT NULL,
    fi_out_dilut      BIGINT        NOT NULL,
    PRIMARY KEY (fi_co_id, fi_year, fi_qtr)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE last_trade (
    lt_s_symb     CHAR(15)     NOT NULL,
    lt_dts        DATETIME     NOT NULL,
    lt_price      DECIMAL(8,2) NOT NULL,
    lt_open_price DECIMAL(8,2) NOT NULL,
    lt_vol        BIGINT       NOT NULL,
    PRIMARY KEY (lt_s_symb)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE news_item (
    ni_id       BIGINT       NOT NULL,
    ni_headline VARCHAR(80)  NOT NULL,
    ni_summary  VARCHAR(255) NOT NULL,
    ni_item     LONGTEXT     NOT NULL,
    ni_dts      DATETIME     NOT NULL,
    ni_source   VARCHAR(30)  NOT NULL,
    ni_author   VARCHAR(30),
    PRIMARY KEY (ni_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE news_xref (
    nx_ni_id BIGINT NOT NULL,
    nx_co_id BIGINT NOT NULL,
    PRIMARY KEY (nx_ni_id, nx_co_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE customer (
    c_id      BIGINT       NOT NULL,
    c_tax_id  VARCHAR(20)  NOT NULL,
    c_st_id   CHAR(4)      NOT NULL,
    c_l_name  VARCHAR(25)  NOT NULL,
    c_f_name  VARCHAR(20)  NOT NULL,
    c_m_name  CHAR(1),
    c_gndr    CHAR(1),
    c_tier    SMALLINT     NOT NULL,
    c_dob     DATE         NOT NULL,
    c_ad_id   BIGINT       NOT NULL,
    c_ctry_1  VARCHAR(3),
    c_area_1  VARCHAR(3),
    c_local_1 VARCHAR(10),
    c_ext_1   VARCHAR(5),
    c_ctry_2  VARCHAR(3),
    c_area_2  VARCHAR(3),
    c_local_2 VARCHAR(10),
    c_ext_2   VARCHAR(5),
    c_ctry_3  VARCHAR(3),
    c_area_3  VARCHAR(3),
    c_local_3 VARCHAR(10),
    c_ext_3   VARCHAR(5),
    c_email_1 VARCHAR(50),
    c_email_2 VARCHAR(50),
    PRIMARY KEY (c_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE customer_account (
    ca_id     BIGINT        NOT NULL,
    ca_b_id   BIGINT        NOT NULL,
    ca_c_id   BIGINT        NOT NULL,
    ca_name   VARCHAR(50),
    ca_tax_st SMALLINT      NOT NULL,
    ca_bal    DECIMAL(12,2) NOT NULL,
    PRIMARY KEY (ca_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE customer_taxrate (
    cx_tx_id CHAR(4) NOT NULL,
    cx_c_id  BIGINT  NOT NULL,
    PRIMARY KEY (cx_tx_id, cx_c_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE account_permission (
    ap_ca_id  BIGINT      NOT NULL,
    ap_acl    CHAR(4)     NOT NULL,
    ap_tax_id VARCHAR(20) NOT NULL,
    ap_l_name VARCHAR(25) NOT NULL,
    ap_f_name VARCHAR(20) NOT NULL,
    PRIMARY KEY (ap_ca_id, ap_tax_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE broker (
    b_id         BIGINT        NOT NULL,
    b_st_id      CHAR(4)       NOT NULL,
    b_name       VARCHAR(49)   NOT NULL,
    b_num_trades INTEGER       NOT NULL,
    b_comm_total DECIMAL(12,2) NOT NULL,
    PRIMARY KEY (b_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE watch_list (
    wl_id   BIGINT NOT NULL,
    wl_c_id BIGINT NOT NULL,
    PRIMARY KEY (wl_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE watch_item (
    wi_wl_id  BIGINT   NOT NULL,
    wi_s_symb CHAR(15) NOT NULL,
    PRIMARY KEY (wi_wl_id, wi_s_symb)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trade (
    t_id          BIGINT        NOT NULL,
    t_dts         DATETIME      NOT NULL,
    t_st_id       CHAR(4)       NOT NULL,
    t_tt_id       CHAR(3)       NOT NULL,
    t_is_cash     SMALLINT      NOT NULL,
    t_s_symb      CHAR(15)      NOT NULL,
    t_qty         INTEGER       NOT NULL,
    t_bid_price   DECIMAL(8,2)  NOT NULL,
    t_ca_id       BIGINT        NOT NULL,
    t_exec_name   VARCHAR(49)   NOT NULL,
    t_trade_price DECIMAL(8,2),
    t_chrg        DECIMAL(10,2) NOT NULL,
    t_comm        DECIMAL(10,2) NOT NULL,
    t_tax         DECIMAL(10,2) NOT NULL,
    t_lifo        SMALLINT      NOT NULL,
    PRIMARY KEY (t_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trade_history (
    th_t_id  BIGINT   NOT NULL,
    th_dts   DATETIME NOT NULL,
    th_st_id CHAR(4)  NOT NULL,
    PRIMARY KEY (th_t_id, th_st_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE trade_request (
    tr_t_id      BIGINT       NOT NULL,
    tr_tt_id     CHAR(3)      NOT NULL,
    tr_s_symb    CHAR(15)     NOT NULL,
    tr_qty       INTEGER      NOT NULL,
    tr_bid_price DECIMAL(8,2) NOT NULL,
    tr_b_id      BIGINT       NOT NULL,
    PRIMARY KEY (tr_t_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE settlement (
    se_t_id          BIGINT        NOT NULL,
    se_cash_type     VARCHAR(40)   NOT NULL,
    se_cash_due_date DATE          NOT NULL,
    se_amt           DECIMAL(10,2) NOT NULL,
    PRIMARY KEY (se_t_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE cash_transaction (
    ct_t_id BIGINT        NOT NULL,
    ct_dts  DATETIME      NOT NULL,
    ct_amt  DECIMAL(10,2) NOT NULL,
    ct_name VARCHAR(100),
    PRIMARY KEY (ct_t_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE holding (
    h_t_id   BIGINT       NOT NULL,
    h_ca_id  BIGINT       NOT NULL,
    h_s_symb CHAR(15)     NOT NULL,
    h_dts    DATETIME     NOT NULL,
    h_price  DECIMAL(8,2) NOT NULL,
    h_qty    INTEGER      NOT NULL,
    PRIMARY KEY (h_t_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE holding_history (
    hh_h_t_id     BIGINT  NOT NULL,
    hh_t_id       BIGINT  NOT NULL,
    hh_before_qty INTEGER NOT NULL,
    hh_after_qty  INTEGER NOT NULL,
    PRIMARY KEY (hh_h_t_id, hh_t_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE holding_summary (
    hs_ca_id  BIGINT   NOT NULL,
    hs_s_symb CHAR(15) NOT NULL,
    hs_qty    INTEGER  NOT NULL,
    PRIMARY KEY (hs_ca_id, hs_s_symb)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- indexes
CREATE INDEX company_by_industry ON company (co_in_id);
CREATE INDEX company_by_name ON company (co_name);
CREATE INDEX security_by_company ON security (s_co_id);
CREATE INDEX news_xref_by_company ON news_xref (nx_co_id);
CREATE INDEX customer_by_tax_id ON customer (c_tax_id);
CREATE INDEX customer_account_by_customer ON customer_account (ca_c_id);
CREATE INDEX customer_taxrate_by_customer ON customer_taxrate (cx_c_id);
CREATE INDEX broker_by_name ON broker (b_name);
CREATE INDEX watch_list_by_customer ON watch_list (wl_c_id);
CREATE INDEX trade_by_account ON trade (t_ca_id, t_dts);
CREATE INDEX trade_by_symbol ON trade (t_s_symb, t_dts);
CREATE INDEX trade_by_status ON trade (t_st_id);
CREATE INDEX trade_request_by_symbol ON trade_request (tr_s_symb);
CREATE INDEX trade_request_by_broker ON trade_request (tr_b_id);
CREATE INDEX holding_by_account ON holding (h_ca_id, h_s_symb, h_dts);
CREATE INDEX holding_history_by_trade ON holding_history (hh_t_id);

-- procedures (the run option procedures, procedures.py: one per transaction that has
-- several round trips; the driver draws every input and CALLs it in autocommit). Each
-- does what its frames in the transaction's module do, opens and ends its own
-- transaction (in autocommit each statement would otherwise commit on its own) and rolls
-- it back on any error before passing the error on (RESIGNAL), so a deadlock reaches the
-- driver as 1213 and is retried. The writers answer after their COMMIT; the readers'
-- result sets come before it (the driver then reads the CALL's status too). Lists come
-- as JSON arrays, read with JSON_EXTRACT, and with JSON_TABLE where only ids are joined
-- (a JSON_TABLE string column has a collation of its own, which would keep the tables'
-- indexes out of a join on it); JSON_TABLE needs MySQL 8 or MariaDB 10.6. The time
-- stamped on rows is the driver's (p_now).

-- Money to cents as the driver's Decimal.quantize rounds it: half to even.
CREATE FUNCTION tpce_cents(x DECIMAL(40,12)) RETURNS DECIMAL(30,2) DETERMINISTIC NO SQL
RETURN IF(ABS(x * 100 - TRUNCATE(x * 100, 0)) = 0.5 AND MOD(TRUNCATE(x * 100, 0), 2) = 0,
          TRUNCATE(x * 100, 0) / 100, ROUND(x, 2))
//

-- x with a replaced by b where it holds a (byte for byte, as the driver looks), else
-- with b replaced by a: Trade-Update's changes, which its next call undoes
-- (trade_update.toggled_name, toggled_shares).
CREATE FUNCTION tpce_toggled(x VARCHAR(100), a VARCHAR(20), b VARCHAR(20)) RETURNS VARCHAR(100) DETERMINISTIC NO SQL
RETURN IF(LOCATE(BINARY a, x) > 0, REPLACE(x, a, b), REPLACE(x, b, a))
//

-- The lots a trade of p_qty at p_price takes (lots.py): a sell the account's long lots
-- of the symbol, a buy its short ones, newest first (LIFO) or oldest first, until the
-- quantity is covered; none when the account holds the other way (p_held_qty). Gives
-- the buy and the sell value of the quantity covered (a sell sold at the trade's price
-- what was bought at the lots', a cover the other way round: Taken.values), what is left
-- over for a new lot (signed: positive long), the lots touched as JSON [id, before,
-- after] in order, the ids of those closed, and the one left smaller (at most one).
CREATE PROCEDURE tpce_take_lots(
    IN p_acct_id BIGINT, IN p_symbol VARCHAR(15), IN p_is_lifo INT, IN p_qty INT, IN p_price DECIMAL(8,2),
    IN p_is_sell INT, IN p_held_qty INT, OUT p_buy_value DECIMAL(20,2), OUT p_sell_value DECIMAL(20,2), OUT p_left INT,
    OUT p_changes TEXT, OUT p_closed TEXT, OUT p_partial BIGINT, OUT p_partial_qty INT)
BEGIN
    DECLARE v_needed INT DEFAULT p_qty;
    DECLARE v_done INT DEFAULT 0;
    DECLARE v_t_id BIGINT;
    DECLARE v_h_qty, v_part, v_after INT;
    DECLARE v_h_price DECIMAL(8,2);
    DECLARE v_held, v_traded DECIMAL(20,2) DEFAULT 0;
    DECLARE c_lots CURSOR FOR SELECT h_t_id, h_qty, h_price FROM holding WHERE h_ca_id = p_acct_id AND h_s_symb = p_symbol
        ORDER BY IF(p_is_lifo <> 0, h_dts, NULL) DESC, IF(p_is_lifo <> 0, h_t_id, NULL) DESC, h_dts, h_t_id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;
    SET p_changes = '[]', p_closed = '[]', p_partial = NULL, p_partial_qty = NULL;
    IF (p_is_sell <> 0 AND p_held_qty > 0) OR (p_is_sell = 0 AND p_held_qty < 0) THEN
        OPEN c_lots;
        lots: LOOP
            FETCH c_lots INTO v_t_id, v_h_qty, v_h_price;
            IF v_done OR v_needed = 0 THEN
                LEAVE lots;
            END IF;
            SET v_part = LEAST(ABS(v_h_qty), v_needed);
            SET v_after = (ABS(v_h_qty) - v_part) * IF(v_h_qty > 0, 1, -1);
            SET p_changes = JSON_ARRAY_APPEND(p_changes, '$', JSON_ARRAY(v_t_id, v_h_qty, v_after));
            IF v_after = 0 THEN
                SET p_closed = JSON_ARRAY_APPEND(p_closed, '$', v_t_id);
            ELSE
                SET p_partial = v_t_id, p_partial_qty = v_after;
            END IF;
            SET v_held = v_held + v_part * v_h_price, v_traded = v_traded + v_part * p_price, v_needed = v_needed - v_part;
        END LOOP;
        CLOSE c_lots;
    END IF;
    SET p_left = IF(p_is_sell <> 0, -v_needed, v_needed), p_buy_value = IF(p_is_sell <> 0, v_held, v_traded),
        p_sell_value = IF(p_is_sell <> 0, v_traded, v_held);
END
//

-- Trade-Order (trade_order.py): frames 1-4 read without locks, then TRADE, a limit
-- order's TRADE_REQUEST and TRADE_HISTORY; the requested rollback (frame 5) rolls all of
-- that back and answers a row of NULLs. An executor the account does not permit (names
-- compared byte for byte, as the driver compares them), or a row missing, fails the
-- call. Answers the order as the market exchange emulator gets it.
CREATE PROCEDURE tpce_trade_order(
    IN p_trade_id BIGINT, IN p_acct_id BIGINT, IN p_exec_f_name VARCHAR(20), IN p_exec_l_name VARCHAR(25),
    IN p_exec_tax_id VARCHAR(20), IN p_symbol VARCHAR(15), IN p_co_name VARCHAR(60), IN p_issue VARCHAR(6),
    IN p_trade_type VARCHAR(3), IN p_is_lifo INT, IN p_is_margin INT, IN p_roll_it_back INT,
    IN p_requested_price DECIMAL(8,2), IN p_trade_qty INT, IN p_now DATETIME)
trade_order: BEGIN
    DECLARE v_b_id, v_c_id BIGINT;
    DECLARE v_tax_st, v_tier, v_is_market, v_is_sell SMALLINT;
    DECLARE v_assets DECIMAL(20,2);
    DECLARE v_f_name, v_tax_id VARCHAR(20);
    DECLARE v_l_name VARCHAR(25);
    DECLARE v_permitted INT;
    DECLARE v_ex_id CHAR(6);
    DECLARE v_symbol VARCHAR(15);
    DECLARE v_last_price, v_price DECIMAL(8,2);
    DECLARE v_hs_qty, v_left, v_partial_qty INT;
    DECLARE v_buy, v_sell DECIMAL(20,2);
    DECLARE v_changes, v_closed TEXT;
    DECLARE v_partial BIGINT;
    DECLARE v_tax_amount DECIMAL(20,2) DEFAULT 0;
    DECLARE v_tax_rate DECIMAL(12,5);
    DECLARE v_comm_rate DECIMAL(5,2);
    DECLARE v_charge DECIMAL(10,2);
    DECLARE v_status CHAR(4);
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    -- frame 1: the account, its customer and broker
    SELECT ca_b_id, ca_c_id, ca_tax_st, ca_bal, c_f_name, c_l_name, c_tier, c_tax_id
        INTO v_b_id, v_c_id, v_tax_st, v_assets, v_f_name, v_l_name, v_tier, v_tax_id
        FROM customer_account, customer, broker WHERE ca_id = p_acct_id AND c_id = ca_c_id AND b_id = ca_b_id;
    IF v_c_id IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Order: no such account';
    END IF;
    -- frame 2: someone other than the owner needs the account's permission
    IF NOT (BINARY p_exec_f_name = v_f_name AND BINARY p_exec_l_name = v_l_name AND BINARY p_exec_tax_id = v_tax_id) THEN
        SELECT COUNT(ap_acl) INTO v_permitted FROM account_permission WHERE ap_ca_id = p_acct_id
            AND ap_f_name = p_exec_f_name AND ap_l_name = p_exec_l_name AND ap_tax_id = p_exec_tax_id;
        IF v_permitted = 0 THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Order: the executor may not trade on the account';
        END IF;
    END IF;
    -- frame 3: the security, its price and the trade type; the lots a sell or a cover
    -- takes for the tax estimate; commission, charge, and a margin order's assets
    IF p_symbol <> '' THEN
        SELECT s_ex_id, s_symb INTO v_ex_id, v_symbol FROM security, company WHERE s_symb = p_symbol AND co_id = s_co_id
            LIMIT 1;
    ELSE
        SELECT s_ex_id, s_symb INTO v_ex_id, v_symbol FROM company, security
            WHERE co_name = p_co_name AND s_co_id = co_id AND s_issue = p_issue LIMIT 1;
    END IF;
    IF v_symbol IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Order: no such security';
    END IF;
    SELECT lt_price, tt_is_mrkt, tt_is_sell INTO v_last_price, v_is_market, v_is_sell
        FROM last_trade, trade_type WHERE lt_s_symb = v_symbol AND tt_id = p_trade_type;
    IF v_is_market IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Order: no last trade or no such trade type';
    END IF;
    SET v_price = IF(v_is_market <> 0, v_last_price, p_requested_price);
    SELECT hs_qty INTO v_hs_qty FROM holding_summary WHERE hs_ca_id = p_acct_id AND hs_s_symb = v_symbol;
    CALL tpce_take_lots(p_acct_id, v_symbol, p_is_lifo, p_trade_qty, v_price, v_is_sell, IFNULL(v_hs_qty, 0),
                        v_buy, v_sell, v_left, v_changes, v_closed, v_partial, v_partial_qty);
    IF v_sell > v_buy AND v_tax_st IN (1, 2) THEN
        SELECT SUM(tx_rate) INTO v_tax_rate FROM taxrate, customer_taxrate WHERE tx_id = cx_tx_id AND cx_c_id = v_c_id;
        SET v_tax_amount = tpce_cents((v_sell - v_buy) * IFNULL(v_tax_rate, 0));
    END IF;
    SELECT cr_rate, ch_chrg INTO v_comm_rate, v_charge FROM commission_rate, charge
        WHERE cr_c_tier = v_tier AND cr_tt_id = p_trade_type AND cr_ex_id = v_ex_id AND cr_from_qty <= p_trade_qty
        AND cr_to_qty >= p_trade_qty AND ch_c_tier = cr_c_tier AND ch_tt_id = cr_tt_id LIMIT 1;
    IF v_comm_rate IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Order: no commission rate or charge';
    END IF;
    IF p_is_margin <> 0 THEN
        SELECT v_assets + IFNULL(SUM(hs_qty * lt_price), 0) INTO v_assets FROM holding_summary, last_trade
            WHERE hs_ca_id = p_acct_id AND lt_s_symb = hs_s_symb;
    END IF;
    SET v_status = IF(v_is_market <> 0, 'SBMT', 'PNDG');
    -- frame 4: the order
    INSERT INTO trade (t_id, t_dts, t_st_id, t_tt_id, t_is_cash, t_s_symb, t_qty, t_bid_price, t_ca_id, t_exec_name,
                       t_trade_price, t_chrg, t_comm, t_tax, t_lifo)
        VALUES (p_trade_id, p_now, v_status, p_trade_type, IF(p_is_margin <> 0, 0, 1), v_symbol, p_trade_qty, v_price,
                p_acct_id, CONCAT(p_exec_f_name, ' ', p_exec_l_name), NULL, v_charge,
                tpce_cents(v_comm_rate / 100 * p_trade_qty * v_price), 0, p_is_lifo);
    IF v_is_market = 0 THEN
        INSERT INTO trade_request (tr_t_id, tr_tt_id, tr_s_symb, tr_qty, tr_bid_price, tr_b_id)
            VALUES (p_trade_id, p_trade_type, v_symbol, p_trade_qty, v_price, v_b_id);
    END IF;
    INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES (p_trade_id, p_now, v_status);
    -- frame 5
    IF p_roll_it_back <> 0 THEN
        ROLLBACK;
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL;
        LEAVE trade_order;
    END IF;
    COMMIT;
    SELECT v_symbol, v_price, v_is_market, v_is_sell, v_buy, v_sell, v_tax_amount, v_assets, v_status;
END
//

-- Trade-Result (trade_result.py): the trade and its account locked together (FOR
-- UPDATE on the join; the holdings are read without locks, as the frames read them),
-- the frames' facts in one read, then the holdings (frame 2, in the frame's order of
-- writes), the trade completed, its history, the broker (frames 3-5), the settlement
-- and a cash trade's balance and cash transaction (frame 6). A trade that is not
-- submitted fails the call. Answers the ticker entry's symbol and quantity, and the
-- account's side of the booking.
CREATE PROCEDURE tpce_trade_result(IN p_trade_id BIGINT, IN p_price DECIMAL(8,2), IN p_now DATETIME)
BEGIN
    DECLARE v_acct_id, v_b_id, v_c_id, v_partial BIGINT;
    DECLARE v_tt_id CHAR(3);
    DECLARE v_symbol VARCHAR(15);
    DECLARE v_qty, v_hs_qty, v_signed, v_left, v_partial_qty INT;
    DECLARE v_charge, v_commission, v_tax, v_se_amount DECIMAL(10,2);
    DECLARE v_is_lifo, v_is_cash, v_tax_st, v_is_sell SMALLINT;
    DECLARE v_st_id CHAR(4);
    DECLARE v_balance DECIMAL(12,2);
    DECLARE v_tt_name VARCHAR(12);
    DECLARE v_s_name VARCHAR(70);
    DECLARE v_comm_rate DECIMAL(5,2);
    DECLARE v_tax_rate DECIMAL(12,5);
    DECLARE v_closes INT;
    DECLARE v_buy, v_sell DECIMAL(20,2);
    DECLARE v_changes, v_closed TEXT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SELECT t_ca_id, t_tt_id, t_s_symb, t_qty, t_chrg, t_lifo, t_is_cash, t_st_id, ca_b_id, ca_c_id, ca_tax_st, ca_bal
        INTO v_acct_id, v_tt_id, v_symbol, v_qty, v_charge, v_is_lifo, v_is_cash, v_st_id, v_b_id, v_c_id, v_tax_st,
             v_balance
        FROM trade, customer_account WHERE t_id = p_trade_id AND ca_id = t_ca_id FOR UPDATE;
    IF v_acct_id IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Result: no such trade';
    END IF;
    IF BINARY v_st_id <> 'SBMT' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Result: the trade is not submitted';
    END IF;
    SELECT tt_name, tt_is_sell, s_name, cr_rate,
           (SELECT hs_qty FROM holding_summary WHERE hs_ca_id = v_acct_id AND hs_s_symb = v_symbol),
           (SELECT SUM(tx_rate) FROM taxrate, customer_taxrate WHERE tx_id = cx_tx_id AND cx_c_id = v_c_id)
        INTO v_tt_name, v_is_sell, v_s_name, v_comm_rate, v_hs_qty, v_tax_rate
        FROM trade_type, security, customer, commission_rate WHERE tt_id = v_tt_id AND s_symb = v_symbol
        AND c_id = v_c_id AND cr_c_tier = c_tier AND cr_tt_id = tt_id AND cr_ex_id = s_ex_id AND cr_from_qty <= v_qty
        AND cr_to_qty >= v_qty LIMIT 1;
    IF v_tt_name IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Trade-Result: no security, customer or commission rate';
    END IF;
    -- frame 2: the holding summary first, then the lots the trade takes and the one it opens
    SET v_signed = IF(v_is_sell <> 0, -v_qty, v_qty);
    SET v_closes = v_hs_qty IS NOT NULL AND v_hs_qty + v_signed = 0;
    IF v_hs_qty IS NULL THEN
        INSERT INTO holding_summary (hs_ca_id, hs_s_symb, hs_qty) VALUES (v_acct_id, v_symbol, v_signed);
    ELSEIF NOT v_closes THEN
        UPDATE holding_summary SET hs_qty = hs_qty + v_signed WHERE hs_ca_id = v_acct_id AND hs_s_symb = v_symbol;
    END IF;
    CALL tpce_take_lots(v_acct_id, v_symbol, v_is_lifo, v_qty, p_price, v_is_sell, IFNULL(v_hs_qty, 0),
                        v_buy, v_sell, v_left, v_changes, v_closed, v_partial, v_partial_qty);
    INSERT INTO holding_history (hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty)
        SELECT c.lot, p_trade_id, c.qty_before, c.qty_after
            FROM JSON_TABLE(v_changes, '$[*]' COLUMNS (lot BIGINT PATH '$[0]', qty_before INT PATH '$[1]',
                                                       qty_after INT PATH '$[2]')) AS c
        UNION ALL SELECT p_trade_id, p_trade_id, 0, v_left FROM DUAL WHERE v_left <> 0;
    DELETE holding FROM JSON_TABLE(v_closed, '$[*]' COLUMNS (lot BIGINT PATH '$')) AS c JOIN holding ON h_t_id = c.lot;
    IF v_partial IS NOT NULL THEN
        UPDATE holding SET h_qty = v_partial_qty WHERE h_t_id = v_partial;
    END IF;
    IF v_left <> 0 THEN
        INSERT INTO holding (h_t_id, h_ca_id, h_s_symb, h_dts, h_price, h_qty)
            VALUES (p_trade_id, v_acct_id, v_symbol, p_now, p_price, v_left);
    ELSEIF v_closes THEN
        DELETE FROM holding_summary WHERE hs_ca_id = v_acct_id AND hs_s_symb = v_symbol;
    END IF;
    -- frames 3, 4 and 5
    SET v_tax = 0;
    IF v_sell > v_buy AND v_tax_st IN (1, 2) THEN
        SET v_tax = tpce_cents((v_sell - v_buy) * IFNULL(v_tax_rate, 0));
    END IF;
    SET v_commission = tpce_cents(v_comm_rate / 100 * v_qty * p_price);
    UPDATE trade SET t_comm = v_commission, t_dts = p_now, t_st_id = 'CMPT', t_trade_price = p_price, t_tax = v_tax
        WHERE t_id = p_trade_id;
    INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES (p_trade_id, p_now, 'CMPT');
    UPDATE broker SET b_comm_total = b_comm_total + v_commission, b_num_trades = b_num_trades + 1 WHERE b_id = v_b_id;
    -- frame 6: what the account receives (negative: pays), less tax for tax status 1
    SET v_se_amount = IF(v_is_sell <> 0, v_qty * p_price - (v_charge + v_commission),
                         -(v_qty * p_price + (v_charge + v_commission)));
    IF v_tax_st = 1 THEN
        SET v_se_amount = v_se_amount - v_tax;
    END IF;
    INSERT INTO settlement (se_t_id, se_cash_type, se_cash_due_date, se_amt)
        VALUES (p_trade_id, IF(v_is_cash <> 0, 'Cash Account', 'Margin'), DATE(p_now + INTERVAL 2 DAY), v_se_amount);
    IF v_is_cash <> 0 THEN
        UPDATE customer_account SET ca_bal = ca_bal + v_se_amount WHERE ca_id = v_acct_id;
        INSERT INTO cash_transaction (ct_t_id, ct_dts, ct_amt, ct_name)
            VALUES (p_trade_id, p_now, v_se_amount, SUBSTRING(CONCAT(v_tt_name, ' ', v_qty, ' shares of ', v_s_name), 1, 100));
        SET v_balance = v_balance + v_se_amount;
    END IF;
    COMMIT;
    SELECT v_symbol, v_qty, v_acct_id, v_balance, v_se_amount, v_commission, v_tax;
END
//

-- Market-Feed (market_feed.py): per symbol, in symbol order, its last price, volume,
-- lowest and highest price of the feed (five JSON arrays). LAST_TRADE's rows one by one
-- in that order; then per symbol the limit orders its prices trigger, locked through
-- TRADE_REQUEST_BY_SYMBOL in TR_T_ID order (the order the driver's one statement's
-- range scan takes them in); those trades submitted (their rows, which only this feed
-- can reach while it holds their requests, taken in that order too), their requests
-- deleted, their history. Answers the triggered orders, by TR_T_ID.
CREATE PROCEDURE tpce_market_feed(IN p_symbols TEXT, IN p_prices TEXT, IN p_volumes TEXT, IN p_lows TEXT,
                                  IN p_highs TEXT, IN p_now DATETIME)
BEGIN
    DECLARE v_n INT DEFAULT 0;
    DECLARE v_symbol VARCHAR(15);
    DECLARE v_price, v_low, v_high DECIMAL(8,2);
    DECLARE v_volume INT;
    DECLARE v_found TEXT DEFAULT '[]';
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    WHILE v_n < JSON_LENGTH(p_symbols) DO
        SET v_symbol = JSON_UNQUOTE(JSON_EXTRACT(p_symbols, CONCAT('$[', v_n, ']'))),
            v_price = JSON_UNQUOTE(JSON_EXTRACT(p_prices, CONCAT('$[', v_n, ']'))),
            v_volume = JSON_EXTRACT(p_volumes, CONCAT('$[', v_n, ']'));
        UPDATE last_trade SET lt_price = v_price, lt_vol = lt_vol + v_volume, lt_dts = p_now WHERE lt_s_symb = v_symbol;
        SET v_n = v_n + 1;
    END WHILE;
    SET v_n = 0;
    WHILE v_n < JSON_LENGTH(p_symbols) DO
        SET v_symbol = JSON_UNQUOTE(JSON_EXTRACT(p_symbols, CONCAT('$[', v_n, ']'))),
            v_low = JSON_UNQUOTE(JSON_EXTRACT(p_lows, CONCAT('$[', v_n, ']'))),
            v_high = JSON_UNQUOTE(JSON_EXTRACT(p_highs, CONCAT('$[', v_n, ']')));
        BEGIN
            DECLARE v_done INT DEFAULT 0;
            DECLARE v_t_id BIGINT;
            DECLARE v_qty INT;
            DECLARE v_bid DECIMAL(8,2);
            DECLARE v_symb VARCHAR(15);
            DECLARE v_tt VARCHAR(3);
            DECLARE c_requests CURSOR FOR SELECT tr_t_id, tr_s_symb, tr_qty, tr_bid_price, tr_tt_id FROM trade_request
                WHERE tr_s_symb = v_symbol AND ((tr_tt_id IN ('TSL', 'TLB') AND tr_bid_price >= v_low)
                                                OR (tr_tt_id = 'TLS' AND tr_bid_price <= v_high))
                ORDER BY tr_t_id FOR UPDATE;
            DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;
            OPEN c_requests;
            requests: LOOP
                FETCH c_requests INTO v_t_id, v_symb, v_qty, v_bid, v_tt;
                IF v_done THEN
                    LEAVE requests;
                END IF;
                SET v_found = JSON_ARRAY_APPEND(v_found, '$', JSON_ARRAY(v_t_id, v_symb, v_qty, CAST(v_bid AS CHAR), v_tt));
            END LOOP;
            CLOSE c_requests;
        END;
        SET v_n = v_n + 1;
    END WHILE;
    UPDATE JSON_TABLE(v_found, '$[*]' COLUMNS (id BIGINT PATH '$[0]')) AS f JOIN trade ON t_id = f.id
        SET t_dts = p_now, t_st_id = 'SBMT';
    DELETE trade_request FROM JSON_TABLE(v_found, '$[*]' COLUMNS (id BIGINT PATH '$[0]')) AS f
        JOIN trade_request ON tr_t_id = f.id;
    INSERT INTO trade_history (th_t_id, th_dts, th_st_id)
        SELECT f.id, p_now, 'SBMT' FROM JSON_TABLE(v_found, '$[*]' COLUMNS (id BIGINT PATH '$[0]')) AS f;
    COMMIT;
    SELECT f.t_id, f.symb, f.qty, f.bid, f.tt
        FROM JSON_TABLE(v_found, '$[*]' COLUMNS (t_id BIGINT PATH '$[0]', symb VARCHAR(15) PATH '$[1]',
                                                qty INT PATH '$[2]', bid DECIMAL(8,2) PATH '$[3]',
                                                tt VARCHAR(3) PATH '$[4]')) AS f
        ORDER BY f.t_id;
END
//

-- Trade-Lookup (trade_lookup.py) and, with p_update 1, Trade-Update (trade_update.py,
-- frames 1-3 only). Frames 1-3 answer three result sets: the frame's trades, their
-- settlements with cash transactions (by SE_T_ID), all their status changes (the driver
-- keeps the first three of each); frame 4 two: its trade, the holding history of the
-- lots it touched. The trades of frames 2 and 3 are found first, as a JSON list of ids
-- in the frame's order (the secondary index covers it), then read by id. The changes are
-- worked out from the values read (the transaction's snapshot, as the frames read them)
-- and written row by row in key order: frame 1 the trades' executor names before the
-- details are read, frames 2 and 3 the settlements' cash types and the cash
-- transactions' names after.
CREATE PROCEDURE tpce_trade_lookup(IN p_update INT, IN p_frame INT, IN p_trade_ids TEXT, IN p_acct_id BIGINT,
                                   IN p_symbol VARCHAR(15), IN p_start DATETIME, IN p_end DATETIME)
BEGIN
    DECLARE v_ids TEXT DEFAULT '[]';
    DECLARE v_first BIGINT;
    DECLARE v_done INT DEFAULT 0;
    DECLARE v_t_id BIGINT;
    DECLARE v_text VARCHAR(100);
    DECLARE c_names CURSOR FOR SELECT t_id, t_exec_name
        FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN trade ON t_id = j.id ORDER BY t_id;
    DECLARE c_settlements CURSOR FOR SELECT se_t_id, IF(p_frame = 2, se_cash_type, ct_name)
        FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN settlement ON se_t_id = j.id
        LEFT JOIN cash_transaction ON ct_t_id = se_t_id ORDER BY se_t_id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    IF p_frame = 1 THEN
        SET v_ids = p_trade_ids;
        SELECT t_id, t_bid_price, t_exec_name, t_is_cash, tt_is_mrkt, t_trade_price
            FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN trade ON t_id = j.id
            JOIN trade_type ON tt_id = t_tt_id ORDER BY t_id;
        IF p_update <> 0 THEN
            OPEN c_names;
            names: LOOP
                FETCH c_names INTO v_t_id, v_text;
                IF v_done THEN
                    LEAVE names;
                END IF;
                UPDATE trade SET t_exec_name = tpce_toggled(v_text, ' X ', ' ') WHERE t_id = v_t_id;
            END LOOP;
            CLOSE c_names;
        END IF;
    ELSEIF p_frame = 2 THEN
        SELECT CONCAT('[', IFNULL(GROUP_CONCAT(t_id ORDER BY t_dts, t_id), ''), ']') INTO v_ids
            FROM (SELECT t_id, t_dts FROM trade WHERE t_ca_id = p_acct_id AND t_dts >= p_start AND t_dts <= p_end
                    ORDER BY t_dts, t_id LIMIT 20) AS x;
        SELECT t_id, t_bid_price, t_exec_name, t_is_cash, t_trade_price
            FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN trade ON t_id = j.id
            ORDER BY t_dts, t_id;
    ELSEIF p_frame = 3 THEN
        SELECT CONCAT('[', IFNULL(GROUP_CONCAT(t_id ORDER BY t_dts, t_id), ''), ']') INTO v_ids
            FROM (SELECT t_id, t_dts FROM trade WHERE t_s_symb = p_symbol AND t_dts >= p_start AND t_dts <= p_end
                    ORDER BY t_dts, t_id LIMIT 20) AS x;
        SELECT t_id, t_ca_id, t_exec_name, t_is_cash, t_trade_price, t_qty, t_dts, t_tt_id, tt_name, s_name
            FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN trade ON t_id = j.id
            JOIN trade_type ON tt_id = t_tt_id JOIN security ON s_symb = t_s_symb ORDER BY t_dts, t_id;
    ELSE
        SELECT t_id INTO v_first FROM trade WHERE t_ca_id = p_acct_id AND t_dts >= p_start ORDER BY t_dts, t_id LIMIT 1;
        SELECT v_first AS t_id FROM DUAL WHERE v_first IS NOT NULL;
        SELECT hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty FROM holding_history
            WHERE hh_h_t_id IN (SELECT hh_h_t_id FROM holding_history WHERE hh_t_id = v_first)
            ORDER BY hh_h_t_id, hh_t_id LIMIT 20;
    END IF;
    IF p_frame <> 4 THEN
        SELECT se_t_id, se_amt, se_cash_due_date, se_cash_type, ct_amt, ct_dts, ct_name
            FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN settlement ON se_t_id = j.id
            LEFT JOIN cash_transaction ON ct_t_id = se_t_id ORDER BY se_t_id;
        SELECT th_t_id, th_dts, th_st_id
            FROM JSON_TABLE(v_ids, '$[*]' COLUMNS (id BIGINT PATH '$')) AS j JOIN trade_history ON th_t_id = j.id
            ORDER BY th_t_id, th_dts;
    END IF;
    IF p_update <> 0 AND p_frame IN (2, 3) THEN
        OPEN c_settlements;
        settlements: LOOP
            FETCH c_settlements INTO v_t_id, v_text;
            IF v_done THEN
                LEAVE settlements;
            END IF;
            IF p_frame = 2 THEN
                UPDATE settlement SET se_cash_type = CASE BINARY TRIM(v_text) WHEN 'Cash Account' THEN 'Cash'
                        WHEN 'Cash' THEN 'Cash Account' WHEN 'Margin Account' THEN 'Margin'
                        WHEN 'Margin' THEN 'Margin Account' ELSE 'Cash Account' END
                    WHERE se_t_id = v_t_id;
            ELSEIF v_text IS NOT NULL THEN
                UPDATE cash_transaction SET ct_name = tpce_toggled(v_text, ' shares of ', ' Shares of ')
                    WHERE ct_t_id = v_t_id;
            END IF;
        END LOOP;
        CLOSE c_settlements;
    END IF;
    COMMIT;
END
//

-- Security-Detail (security_detail.py): six result sets: the security with its company,
-- addresses and exchange (its company id read first, for the rest); three competitors;
-- 20 financial quarters; p_max_rows days of DAILY_MARKET from p_start_day; the last
-- trade; two news items, with their text only when p_access_lob.
CREATE PROCEDURE tpce_security_detail(IN p_symbol VARCHAR(15), IN p_max_rows INT, IN p_start_day DATE,
                                      IN p_access_lob INT)
BEGIN
    DECLARE v_co_id BIGINT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SELECT s_co_id INTO v_co_id FROM security WHERE s_symb = p_symbol;
    IF v_co_id IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Security-Detail: no such security';
    END IF;
    SELECT s_name, co_id, co_name, co_sp_rate, co_ceo, co_desc, co_open_date, co_st_id, ca.ad_line1, ca.ad_line2,
           zca.zc_town, zca.zc_div, ca.ad_zc_code, ca.ad_ctry, s_num_out, s_start_date, s_exch_date, s_pe, s_52wk_high,
           s_52wk_high_date, s_52wk_low, s_52wk_low_date, s_dividend, s_yield, zea.zc_div, ea.ad_ctry, ea.ad_line1,
           ea.ad_line2, zea.zc_town, ea.ad_zc_code, ex_close, ex_desc, ex_name, ex_num_symb, ex_open
        FROM security, company, address ca, address ea, zip_code zca, zip_code zea, exchange
        WHERE s_symb = p_symbol AND co_id = s_co_id AND ca.ad_id = co_ad_id AND ea.ad_id = ex_ad_id
        AND ex_id = s_ex_id AND zca.zc_code = ca.ad_zc_code AND zea.zc_code = ea.ad_zc_code;
    SELECT co_name, in_name FROM company_competitor, company, industry
        WHERE cp_co_id = v_co_id AND co_id = cp_comp_co_id AND in_id = cp_in_id ORDER BY cp_comp_co_id LIMIT 3;
    SELECT fi_year, fi_qtr, fi_qtr_start_date, fi_revenue, fi_net_earn, fi_basic_eps, fi_dilut_eps, fi_margin,
           fi_inventory, fi_assets, fi_liability, fi_out_basic, fi_out_dilut
        FROM financial WHERE fi_co_id = v_co_id ORDER BY fi_year, fi_qtr LIMIT 20;
    SELECT dm_date, dm_close, dm_high, dm_low, dm_vol FROM daily_market
        WHERE dm_s_symb = p_symbol AND dm_date >= p_start_day ORDER BY dm_date LIMIT p_max_rows;
    SELECT lt_price, lt_open_price, lt_vol FROM last_trade WHERE lt_s_symb = p_symbol;
    IF p_access_lob <> 0 THEN
        SELECT ni_item, ni_dts, ni_source, ni_author, ni_headline, ni_summary FROM news_xref, news_item
            WHERE ni_id = nx_ni_id AND nx_co_id = v_co_id ORDER BY ni_dts DESC, ni_id LIMIT 2;
    ELSE
        SELECT ni_dts, ni_source, ni_author, ni_headline, ni_summary FROM news_xref, news_item
            WHERE ni_id = nx_ni_id AND nx_co_id = v_co_id ORDER BY ni_dts DESC, ni_id LIMIT 2;
    END IF;
    COMMIT;
END
//

-- Customer-Position (customer_position.py): three result sets: the customer by id, or
-- by tax id when p_cust_id is 0 (its id found first); its accounts (at most 10, least
-- valuable first) with their balance and holdings' market value; with p_get_history,
-- the 10 latest trades of account number p_acct_index (modulo how many; that account
-- read from the same ordered list again) with their status changes, newest first, and
-- none otherwise.
CREATE PROCEDURE tpce_customer_position(IN p_cust_id BIGINT, IN p_tax_id VARCHAR(20), IN p_get_history INT,
                                        IN p_acct_index INT)
BEGIN
    DECLARE v_c_id, v_acct_id BIGINT;
    DECLARE v_accounts, v_offset INT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    IF p_cust_id = 0 THEN
        SELECT c_id INTO v_c_id FROM customer WHERE c_tax_id = p_tax_id LIMIT 1;
    ELSE
        SELECT c_id INTO v_c_id FROM customer WHERE c_id = p_cust_id;
    END IF;
    IF v_c_id IS NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Customer-Position: no such customer';
    END IF;
    SELECT c_id, c_st_id, c_l_name, c_f_name, c_m_name, c_gndr, c_tier, c_dob, c_ad_id, c_ctry_1, c_area_1, c_local_1,
           c_ext_1, c_ctry_2, c_area_2, c_local_2, c_ext_2, c_ctry_3, c_area_3, c_local_3, c_ext_3, c_email_1, c_email_2
        FROM customer WHERE c_id = v_c_id;
    SELECT ca_id, ca_bal, COALESCE(SUM(hs_qty * lt_price), 0) AS assets
        FROM customer_account LEFT JOIN holding_summary ON hs_ca_id = ca_id LEFT JOIN last_trade ON lt_s_symb = hs_s_symb
        WHERE ca_c_id = v_c_id GROUP BY ca_id, ca_bal ORDER BY assets, ca_id LIMIT 10;
    IF p_get_history <> 0 THEN
        SELECT LEAST(COUNT(*), 10) INTO v_accounts FROM customer_account WHERE ca_c_id = v_c_id;
        IF v_accounts > 0 THEN
            SET v_offset = p_acct_index MOD v_accounts;
            SELECT ca_id INTO v_acct_id FROM customer_account LEFT JOIN holding_summary ON hs_ca_id = ca_id
                LEFT JOIN last_trade ON lt_s_symb = hs_s_symb
                WHERE ca_c_id = v_c_id GROUP BY ca_id, ca_bal ORDER BY COALESCE(SUM(hs_qty * lt_price), 0), ca_id
                LIMIT v_offset, 1;
        END IF;
    END IF;
    SELECT t_id, t_s_symb, t_qty, st_name, th_dts
        FROM (SELECT t_id AS id FROM trade WHERE t_ca_id = v_acct_id ORDER BY t_dts DESC LIMIT 10) latest,
             trade, trade_history, status_type
        WHERE t_id = latest.id AND th_t_id = t_id AND st_id = th_st_id ORDER BY th_dts DESC LIMIT 30;
    COMMIT;
END
//
