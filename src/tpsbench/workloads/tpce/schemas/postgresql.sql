-- TPC-E-like schema for PostgreSQL: the 33 tables of TPC-E with its table and column
-- names in lower case, their primary keys, and the secondary indexes the transactions
-- need. Ids are BIGINT (TPC-E's IDENT_T and TRADE_T), money NUMERIC (exact decimals),
-- TPC-E's BOOLEAN columns SMALLINT 0/1 (one spelling on every database), NEWS_ITEM's
-- LOB TEXT. No constraints between tables: the loader writes them in parallel, in any order.
-- Statements after the "-- indexes" marker are run by the loader after the data is in.
-- Routines after "-- procedures" (the run option procedures), each ended by a line "//";
-- a run installs them before its first step.
--
-- What each transaction reads or writes by key (primary keys unless named):
--   Broker-Volume      broker_by_name, trade_request_by_broker; sector, industry,
--                      company (company_by_industry), security (security_by_company)
--   Customer-Position  customer or customer_by_tax_id; customer_account_by_customer;
--                      holding_summary, last_trade; trade_by_account (last 10 trades),
--                      trade_history, status_type
--   Market-Feed        last_trade; trade_request_by_symbol; trade, trade_history
--   Market-Watch       watch_list_by_customer, watch_item; industry, company_by_industry,
--                      security; holding_summary; last_trade, daily_market (symbol, date)
--   Security-Detail    security, company, address, zip_code, exchange;
--                      company_competitor, industry; financial (company, year, quarter);
--                      daily_market (symbol, date); last_trade; news_xref_by_company, news_item
--   Trade-Lookup       trade, trade_type, settlement, cash_transaction, trade_history (F1);
--                      trade_by_account (F2); trade_by_symbol (F3); trade_by_account,
--                      holding_history_by_trade and holding_history (F4)
--   Trade-Order        customer_account, customer, broker; account_permission; company_by_name,
--                      security; last_trade, trade_type; holding_summary, holding_by_account;
--                      customer_taxrate_by_customer, taxrate; commission_rate, charge;
--                      inserts trade, trade_request, trade_history
--   Trade-Result       trade, trade_type, holding_summary, holding_by_account, holding,
--                      holding_history; customer_taxrate_by_customer, taxrate; security,
--                      customer, commission_rate; broker; settlement, customer_account,
--                      cash_transaction
--   Trade-Status       trade_by_account, status_type, trade_type, security, exchange;
--                      customer_account, customer, broker
--   Trade-Update       as Trade-Lookup's F1-F3, updating trade, settlement, cash_transaction
--   Data-Maintenance   one of twelve tables by key (account_permission ... watch_item)
--   Trade-Cleanup      trade_request; trade_by_status (stale submitted trades), trade_history

CREATE TABLE status_type (
    st_id   CHAR(4)  NOT NULL,
    st_name CHAR(10) NOT NULL,
    PRIMARY KEY (st_id)
);

CREATE TABLE trade_type (
    tt_id      CHAR(3)     NOT NULL,
    tt_name    VARCHAR(12) NOT NULL,
    tt_is_sell SMALLINT    NOT NULL,
    tt_is_mrkt SMALLINT    NOT NULL,
    PRIMARY KEY (tt_id)
);

CREATE TABLE exchange (
    ex_id       CHAR(6)       NOT NULL,
    ex_name     VARCHAR(100)  NOT NULL,
    ex_num_symb INTEGER       NOT NULL,
    ex_open     SMALLINT      NOT NULL,
    ex_close    SMALLINT      NOT NULL,
    ex_desc     VARCHAR(150),
    ex_ad_id    BIGINT        NOT NULL,
    PRIMARY KEY (ex_id)
);

CREATE TABLE sector (
    sc_id   CHAR(2)     NOT NULL,
    sc_name VARCHAR(30) NOT NULL,
    PRIMARY KEY (sc_id)
);

CREATE TABLE industry (
    in_id    CHAR(2)     NOT NULL,
    in_name  VARCHAR(50) NOT NULL,
    in_sc_id CHAR(2)     NOT NULL,
    PRIMARY KEY (in_id)
);

CREATE TABLE zip_code (
    zc_code CHAR(12)    NOT NULL,
    zc_town VARCHAR(80) NOT NULL,
    zc_div  VARCHAR(80) NOT NULL,
    PRIMARY KEY (zc_code)
);

CREATE TABLE address (
    ad_id      BIGINT       NOT NULL,
    ad_line1   VARCHAR(80),
    ad_line2   VARCHAR(80),
    ad_zc_code CHAR(12)     NOT NULL,
    ad_ctry    VARCHAR(80),
    PRIMARY KEY (ad_id)
);

CREATE TABLE taxrate (
    tx_id   CHAR(4)      NOT NULL,
    tx_name VARCHAR(50)  NOT NULL,
    tx_rate NUMERIC(6,5) NOT NULL,
    PRIMARY KEY (tx_id)
);

CREATE TABLE charge (
    ch_tt_id  CHAR(3)       NOT NULL,
    ch_c_tier SMALLINT      NOT NULL,
    ch_chrg   NUMERIC(10,2) NOT NULL,
    PRIMARY KEY (ch_tt_id, ch_c_tier)
);

CREATE TABLE commission_rate (
    cr_c_tier   SMALLINT     NOT NULL,
    cr_tt_id    CHAR(3)      NOT NULL,
    cr_ex_id    CHAR(6)      NOT NULL,
    cr_from_qty INTEGER      NOT NULL,
    cr_to_qty   INTEGER      NOT NULL,
    cr_rate     NUMERIC(5,2) NOT NULL,
    PRIMARY KEY (cr_c_tier, cr_tt_id, cr_ex_id, cr_from_qty)
);

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
);

CREATE TABLE company_competitor (
    cp_co_id      BIGINT  NOT NULL,
    cp_comp_co_id BIGINT  NOT NULL,
    cp_in_id      CHAR(2) NOT NULL,
    PRIMARY KEY (cp_co_id, cp_comp_co_id, cp_in_id)
);

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
    s_pe             NUMERIC(10,2) NOT NULL,
    s_52wk_high      NUMERIC(8,2)  NOT NULL,
    s_52wk_high_date DATE          NOT NULL,
    s_52wk_low       NUMERIC(8,2)  NOT NULL,
    s_52wk_low_date  DATE          NOT NULL,
    s_dividend       NUMERIC(10,2) NOT NULL,
    s_yield          NUMERIC(5,2)  NOT NULL,
    PRIMARY KEY (s_symb)
);

CREATE TABLE daily_market (
    dm_date   DATE         NOT NULL,
    dm_s_symb CHAR(15)     NOT NULL,
    dm_close  NUMERIC(8,2) NOT NULL,
    dm_high   NUMERIC(8,2) NOT NULL,
    dm_low    NUMERIC(8,2) NOT NULL,
    dm_vol    BIGINT       NOT NULL,
    PRIMARY KEY (dm_s_symb, dm_date)
);

CREATE TABLE financial (
    fi_co_id          BIGINT        NOT NULL,
    fi_year           SMALLINT      NOT NULL,
    fi_qtr            SMALLINT      NOT NULL,
    fi_qtr_start_date DATE          NOT NULL,
    fi_revenue        NUMERIC(15,2) NOT NULL,
    fi_net_earn       NUMERIC(15,2) NOT NULL,
    fi_basic_eps      NUMERIC(10,2) NOT NULL,
    fi_dilut_eps      NUMERIC(10,2) NOT NULL,
    fi_margin         NUMERIC(10,2) NOT NULL,
    fi_inventory      NUMERIC(15,2) NOT NULL,
    fi_assets         NUMERIC(15,2) NOT NULL,
    fi_liability      NUMERIC(15,2) NOT NULL,
    fi_out_basic      BIGINT        NOT NULL,
    fi_out_dilut      BIGINT        NOT NULL,
    PRIMARY KEY (fi_co_id, fi_year, fi_qtr)
);

CREATE TABLE last_trade (
    lt_s_symb     CHAR(15)     NOT NULL,
    lt_dts        TIMESTAMP    NOT NULL,
    lt_price      NUMERIC(8,2) NOT NULL,
    lt_open_price NUMERIC(8,2) NOT NULL,
    lt_vol        BIGINT       NOT NULL,
    PRIMARY KEY (lt_s_symb)
);

CREATE TABLE news_item (
    ni_id       BIGINT       NOT NULL,
    ni_headline VARCHAR(80)  NOT NULL,
    ni_summary  VARCHAR(255) NOT NULL,
    ni_item     TEXT         NOT NULL,
    ni_dts      TIMESTAMP    NOT NULL,
    ni_source   VARCHAR(30)  NOT NULL,
    ni_author   VARCHAR(30),
    PRIMARY KEY (ni_id)
);

CREATE TABLE news_xref (
    nx_ni_id BIGINT NOT NULL,
    nx_co_id BIGINT NOT NULL,
    PRIMARY KEY (nx_ni_id, nx_co_id)
);

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
);

CREATE TABLE customer_account (
    ca_id     BIGINT        NOT NULL,
    ca_b_id   BIGINT        NOT NULL,
    ca_c_id   BIGINT        NOT NULL,
    ca_name   VARCHAR(50),
    ca_tax_st SMALLINT      NOT NULL,
    ca_bal    NUMERIC(12,2) NOT NULL,
    PRIMARY KEY (ca_id)
);

CREATE TABLE customer_taxrate (
    cx_tx_id CHAR(4) NOT NULL,
    cx_c_id  BIGINT  NOT NULL,
    PRIMARY KEY (cx_tx_id, cx_c_id)
);

CREATE TABLE account_permission (
    ap_ca_id  BIGINT      NOT NULL,
    ap_acl    CHAR(4)     NOT NULL,
    ap_tax_id VARCHAR(20) NOT NULL,
    ap_l_name VARCHAR(25) NOT NULL,
    ap_f_name VARCHAR(20) NOT NULL,
    PRIMARY KEY (ap_ca_id, ap_tax_id)
);

CREATE TABLE broker (
    b_id         BIGINT        NOT NULL,
    b_st_id      CHAR(4)       NOT NULL,
    b_name       VARCHAR(49)   NOT NULL,
    b_num_trades INTEGER       NOT NULL,
    b_comm_total NUMERIC(12,2) NOT NULL,
    PRIMARY KEY (b_id)
);

CREATE TABLE watch_list (
    wl_id   BIGINT NOT NULL,
    wl_c_id BIGINT NOT NULL,
    PRIMARY KEY (wl_id)
);

CREATE TABLE watch_item (
    wi_wl_id  BIGINT   NOT NULL,
    wi_s_symb CHAR(15) NOT NULL,
    PRIMARY KEY (wi_wl_id, wi_s_symb)
);

CREATE TABLE trade (
    t_id          BIGINT        NOT NULL,
    t_dts         TIMESTAMP     NOT NULL,
    t_st_id       CHAR(4)       NOT NULL,
    t_tt_id       CHAR(3)       NOT NULL,
    t_is_cash     SMALLINT      NOT NULL,
    t_s_symb      CHAR(15)      NOT NULL,
    t_qty         INTEGER       NOT NULL,
    t_bid_price   NUMERIC(8,2)  NOT NULL,
    t_ca_id       BIGINT        NOT NULL,
    t_exec_name   VARCHAR(49)   NOT NULL,
    t_trade_price NUMERIC(8,2),
    t_chrg        NUMERIC(10,2) NOT NULL,
    t_comm        NUMERIC(10,2) NOT NULL,
    t_tax         NUMERIC(10,2) NOT NULL,
    t_lifo        SMALLINT      NOT NULL,
    PRIMARY KEY (t_id)
);

CREATE TABLE trade_history (
    th_t_id  BIGINT    NOT NULL,
    th_dts   TIMESTAMP NOT NULL,
    th_st_id CHAR(4)   NOT NULL,
    PRIMARY KEY (th_t_id, th_st_id)
);

CREATE TABLE trade_request (
    tr_t_id      BIGINT       NOT NULL,
    tr_tt_id     CHAR(3)      NOT NULL,
    tr_s_symb    CHAR(15)     NOT NULL,
    tr_qty       INTEGER      NOT NULL,
    tr_bid_price NUMERIC(8,2) NOT NULL,
    tr_b_id      BIGINT       NOT NULL,
    PRIMARY KEY (tr_t_id)
);

CREATE TABLE settlement (
    se_t_id          BIGINT        NOT NULL,
    se_cash_type     VARCHAR(40)   NOT NULL,
    se_cash_due_date DATE          NOT NULL,
    se_amt           NUMERIC(10,2) NOT NULL,
    PRIMARY KEY (se_t_id)
);

CREATE TABLE cash_transaction (
    ct_t_id BIGINT        NOT NULL,
    ct_dts  TIMESTAMP     NOT NULL,
    ct_amt  NUMERIC(10,2) NOT NULL,
    ct_name VARCHAR(100),
    PRIMARY KEY (ct_t_id)
);

CREATE TABLE holding (
    h_t_id   BIGINT       NOT NULL,
    h_ca_id  BIGINT       NOT NULL,
    h_s_symb CHAR(15)     NOT NULL,
    h_dts    TIMESTAMP    NOT NULL,
    h_price  NUMERIC(8,2) NOT NULL,
    h_qty    INTEGER      NOT NULL,
    PRIMARY KEY (h_t_id)
);

CREATE TABLE holding_history (
    hh_h_t_id     BIGINT  NOT NULL,
    hh_t_id       BIGINT  NOT NULL,
    hh_before_qty INTEGER NOT NULL,
    hh_after_qty  INTEGER NOT NULL,
    PRIMARY KEY (hh_h_t_id, hh_t_id)
);

CREATE TABLE holding_summary (
    hs_ca_id  BIGINT   NOT NULL,
    hs_s_symb CHAR(15) NOT NULL,
    hs_qty    INTEGER  NOT NULL,
    PRIMARY KEY (hs_ca_id, hs_s_symb)
);

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

-- procedures (the run option procedures, procedures.py: one function per transaction
-- that has several round trips; the driver draws every input and calls it in autocommit,
-- so that a call is one transaction, rolled back whole when the function raises). Each
-- does what its frames in the transaction's module do, statement for statement where
-- the frames' order of locking depends on it. The time stamped on rows is the driver's
-- (p_now), as on the client path. A part of an answer with many rows comes as one array
-- per column, in the order of the frame's statement. VARCHAR, never TEXT, for values
-- compared with CHAR(n) columns: text = bpchar cannot use their indexes.

-- Money to cents as the driver's Decimal.quantize rounds it: half to even.
CREATE FUNCTION tpce_cents(x NUMERIC) RETURNS NUMERIC
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN abs(x * 100 - trunc(x * 100)) = 0.5 AND mod(trunc(x * 100), 2) = 0
                THEN trunc(x * 100) * 0.01 ELSE round(x, 2) END
$$
//

-- x with a replaced by b where it holds a, else with b replaced by a: Trade-Update's
-- changes, which its next call undoes (trade_update.toggled_name, toggled_shares).
CREATE FUNCTION tpce_toggled(x VARCHAR, a VARCHAR, b VARCHAR) RETURNS VARCHAR
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN strpos(x, a) > 0 THEN replace(x, a, b) ELSE replace(x, b, a) END
$$
//

-- The lots a trade of p_qty at p_price takes (lots.py): a sell the account's long lots
-- of the symbol, a buy its short ones, newest first (LIFO) or oldest first, until the
-- quantity is covered; none when the account holds the other way (p_held_qty). Returns
-- the buy and the sell value of the quantity covered (a sell sold at the trade's price
-- what was bought at the lots', a cover the other way round: Taken.values), what is left
-- over for a new lot (signed: positive long), and per lot touched (in order) its id, its
-- quantity before and after; the lots closed, and the one left smaller (at most one).
CREATE FUNCTION tpce_take_lots(
    p_acct_id BIGINT, p_symbol VARCHAR, p_is_lifo INTEGER, p_qty INTEGER, p_price NUMERIC, p_is_sell INTEGER,
    p_held_qty INTEGER,
    OUT out_buy_value NUMERIC, OUT out_sell_value NUMERIC, OUT out_left INTEGER, OUT out_lots BIGINT[],
    OUT out_before INTEGER[], OUT out_after INTEGER[], OUT out_closed BIGINT[], OUT out_partial BIGINT,
    OUT out_partial_qty INTEGER)
LANGUAGE plpgsql AS $$
DECLARE
    v_lot RECORD;
    v_needed INTEGER := p_qty;
    v_part INTEGER;
    v_after INTEGER;
    v_held NUMERIC := 0;
    v_traded NUMERIC := 0;
BEGIN
    out_lots := '{}';
    out_before := '{}';
    out_after := '{}';
    out_closed := '{}';
    IF (p_is_sell <> 0 AND p_held_qty > 0) OR (p_is_sell = 0 AND p_held_qty < 0) THEN
        FOR v_lot IN SELECT h_t_id, h_qty, h_price FROM holding WHERE h_ca_id = p_acct_id AND h_s_symb = p_symbol
                ORDER BY CASE WHEN p_is_lifo <> 0 THEN h_dts END DESC, CASE WHEN p_is_lifo <> 0 THEN h_t_id END DESC,
                         h_dts, h_t_id LOOP
            EXIT WHEN v_needed = 0;
            v_part := least(abs(v_lot.h_qty), v_needed);
            v_after := (abs(v_lot.h_qty) - v_part) * CASE WHEN v_lot.h_qty > 0 THEN 1 ELSE -1 END;
            out_lots := out_lots || v_lot.h_t_id;
            out_before := out_before || v_lot.h_qty;
            out_after := out_after || v_after;
            IF v_after = 0 THEN
                out_closed := out_closed || v_lot.h_t_id;
            ELSE
                out_partial := v_lot.h_t_id;
                out_partial_qty := v_after;
            END IF;
            v_held := v_held + v_part * v_lot.h_price;
            v_traded := v_traded + v_part * p_price;
            v_needed := v_needed - v_part;
        END LOOP;
    END IF;
    out_left := CASE WHEN p_is_sell <> 0 THEN -v_needed ELSE v_needed END;
    out_buy_value := CASE WHEN p_is_sell <> 0 THEN v_held ELSE v_traded END;
    out_sell_value := CASE WHEN p_is_sell <> 0 THEN v_traded ELSE v_held END;
END
$$
//

-- Trade-Order (trade_order.py): frames 1-4 read without locks, then TRADE, a limit
-- order's TRADE_REQUEST and TRADE_HISTORY; the requested rollback (frame 5) raises
-- SQLSTATE TPCE1 after all of that. An executor the account does not permit, or a row
-- missing, fails the call. Returns the order as the market exchange emulator gets it.
CREATE FUNCTION tpce_trade_order(
    p_trade_id BIGINT, p_acct_id BIGINT, p_exec_f_name VARCHAR, p_exec_l_name VARCHAR, p_exec_tax_id VARCHAR,
    p_symbol VARCHAR, p_co_name VARCHAR, p_issue VARCHAR, p_trade_type VARCHAR, p_is_lifo INTEGER,
    p_is_margin INTEGER, p_roll_it_back INTEGER, p_requested_price NUMERIC, p_trade_qty INTEGER, p_now TIMESTAMP,
    OUT out_symbol VARCHAR, OUT out_price NUMERIC, OUT out_is_market SMALLINT, OUT out_is_sell SMALLINT,
    OUT out_buy_value NUMERIC, OUT out_sell_value NUMERIC, OUT out_tax_amount NUMERIC, OUT out_acct_assets NUMERIC,
    OUT out_status VARCHAR)
LANGUAGE plpgsql AS $$
DECLARE
    v_b_id BIGINT;
    v_c_id BIGINT;
    v_tax_st SMALLINT;
    v_f_name VARCHAR;
    v_l_name VARCHAR;
    v_tier SMALLINT;
    v_tax_id VARCHAR;
    v_ex_id CHAR(6);
    v_last_price NUMERIC;
    v_hs_qty INTEGER;
    v_lots RECORD;
    v_tax_rate NUMERIC;
    v_comm_rate NUMERIC;
    v_charge NUMERIC;
    v_assets NUMERIC;
BEGIN
    -- frame 1: the account, its customer and broker
    SELECT ca_b_id, ca_c_id, ca_tax_st, ca_bal, c_f_name, c_l_name, c_tier, c_tax_id
        INTO v_b_id, v_c_id, v_tax_st, out_acct_assets, v_f_name, v_l_name, v_tier, v_tax_id
        FROM customer_account, customer, broker WHERE ca_id = p_acct_id AND c_id = ca_c_id AND b_id = ca_b_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Trade-Order: no account %', p_acct_id;
    END IF;
    -- frame 2: someone other than the owner needs the account's permission
    IF (p_exec_f_name, p_exec_l_name, p_exec_tax_id) IS DISTINCT FROM (v_f_name, v_l_name, v_tax_id) THEN
        PERFORM ap_acl FROM account_permission WHERE ap_ca_id = p_acct_id AND ap_f_name = p_exec_f_name
            AND ap_l_name = p_exec_l_name AND ap_tax_id = p_exec_tax_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'Trade-Order: % % may not trade on %', p_exec_f_name, p_exec_l_name, p_acct_id;
        END IF;
    END IF;
    -- frame 3: the security, its price and the trade type; the lots a sell or a cover
    -- takes for the tax estimate; commission, charge, and a margin order's assets
    IF p_symbol <> '' THEN
        SELECT s_ex_id, s_symb INTO v_ex_id, out_symbol FROM security, company WHERE s_symb = p_symbol AND co_id = s_co_id;
    ELSE
        SELECT s_ex_id, s_symb INTO v_ex_id, out_symbol FROM company, security
            WHERE co_name = p_co_name AND s_co_id = co_id AND s_issue = p_issue;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Trade-Order: no security %', coalesce(nullif(p_symbol, ''), p_co_name || ' ' || p_issue);
    END IF;
    SELECT lt_price, tt_is_mrkt, tt_is_sell INTO v_last_price, out_is_market, out_is_sell
        FROM last_trade, trade_type WHERE lt_s_symb = out_symbol AND tt_id = p_trade_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Trade-Order: no last trade of % or no trade type %', out_symbol, p_trade_type;
    END IF;
    out_price := CASE WHEN out_is_market <> 0 THEN v_last_price ELSE p_requested_price END;
    SELECT hs_qty INTO v_hs_qty FROM holding_summary WHERE hs_ca_id = p_acct_id AND hs_s_symb = out_symbol;
    SELECT * INTO v_lots FROM tpce_take_lots(p_acct_id, out_symbol, p_is_lifo, p_trade_qty, out_price, out_is_sell,
                                             coalesce(v_hs_qty, 0));
    out_buy_value := v_lots.out_buy_value;
    out_sell_value := v_lots.out_sell_value;
    out_tax_amount := 0;
    IF out_sell_value > out_buy_value AND v_tax_st IN (1, 2) THEN
        SELECT SUM(tx_rate) INTO v_tax_rate FROM taxrate, customer_taxrate WHERE tx_id = cx_tx_id AND cx_c_id = v_c_id;
        out_tax_amount := tpce_cents((out_sell_value - out_buy_value) * coalesce(v_tax_rate, 0));
    END IF;
    SELECT cr_rate, ch_chrg INTO v_comm_rate, v_charge FROM commission_rate, charge
        WHERE cr_c_tier = v_tier AND cr_tt_id = p_trade_type AND cr_ex_id = v_ex_id AND cr_from_qty <= p_trade_qty
        AND cr_to_qty >= p_trade_qty AND ch_c_tier = cr_c_tier AND ch_tt_id = cr_tt_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Trade-Order: no commission rate or charge for tier %, %', v_tier, p_trade_type;
    END IF;
    IF p_is_margin <> 0 THEN
        SELECT SUM(hs_qty * lt_price) INTO v_assets FROM holding_summary, last_trade
            WHERE hs_ca_id = p_acct_id AND lt_s_symb = hs_s_symb;
        out_acct_assets := out_acct_assets + coalesce(v_assets, 0);
    END IF;
    out_status := CASE WHEN out_is_market <> 0 THEN 'SBMT' ELSE 'PNDG' END;
    -- frame 4: the order
    INSERT INTO trade (t_id, t_dts, t_st_id, t_tt_id, t_is_cash, t_s_symb, t_qty, t_bid_price, t_ca_id, t_exec_name,
                       t_trade_price, t_chrg, t_comm, t_tax, t_lifo)
        VALUES (p_trade_id, p_now, out_status, p_trade_type, CASE WHEN p_is_margin <> 0 THEN 0 ELSE 1 END, out_symbol,
                p_trade_qty, out_price, p_acct_id, p_exec_f_name || ' ' || p_exec_l_name, NULL, v_charge,
                tpce_cents(v_comm_rate / 100 * p_trade_qty * out_price), 0, p_is_lifo);
    IF out_is_market = 0 THEN
        INSERT INTO trade_request (tr_t_id, tr_tt_id, tr_s_symb, tr_qty, tr_bid_price, tr_b_id)
            VALUES (p_trade_id, p_trade_type, out_symbol, p_trade_qty, out_price, v_b_id);
    END IF;
    INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES (p_trade_id, p_now, out_status);
    -- frame 5
    IF p_roll_it_back <> 0 THEN
        RAISE EXCEPTION 'Trade-Order: rolled back as requested' USING ERRCODE = 'TPCE1';
    END IF;
END
$$
//

-- Trade-Result (trade_result.py): the trade and its account locked together (FOR
-- UPDATE on the join), the frames' facts in one read, then the holdings (frame 2, in
-- the frame's order of writes), the trade completed, its history, the broker (frames
-- 3-5), the settlement and a cash trade's balance and cash transaction (frame 6). A
-- trade that is not submitted fails the call. Returns the ticker entry's symbol and
-- quantity, and the account's side of the booking.
CREATE FUNCTION tpce_trade_result(
    p_trade_id BIGINT, p_price NUMERIC, p_now TIMESTAMP,
    OUT out_symbol VARCHAR, OUT out_qty INTEGER, OUT out_acct_id BIGINT, OUT out_acct_bal NUMERIC,
    OUT out_se_amount NUMERIC, OUT out_commission NUMERIC, OUT out_tax NUMERIC)
LANGUAGE plpgsql AS $$
DECLARE
    v_tt_id CHAR(3);
    v_charge NUMERIC;
    v_is_lifo SMALLINT;
    v_is_cash SMALLINT;
    v_st_id CHAR(4);
    v_b_id BIGINT;
    v_c_id BIGINT;
    v_tax_st SMALLINT;
    v_tt_name VARCHAR;
    v_is_sell SMALLINT;
    v_s_name VARCHAR;
    v_comm_rate NUMERIC;
    v_hs_qty INTEGER;
    v_tax_rate NUMERIC;
    v_signed INTEGER;
    v_closes BOOLEAN;
    v_lots RECORD;
BEGIN
    SELECT t_ca_id, t_tt_id, t_s_symb, t_qty, t_chrg, t_lifo, t_is_cash, t_st_id, ca_b_id, ca_c_id, ca_tax_st, ca_bal
        INTO out_acct_id, v_tt_id, out_symbol, out_qty, v_charge, v_is_lifo, v_is_cash, v_st_id, v_b_id, v_c_id,
             v_tax_st, out_acct_bal
        FROM trade, customer_account WHERE t_id = p_trade_id AND ca_id = t_ca_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Trade-Result: no trade %', p_trade_id;
    END IF;
    IF v_st_id <> 'SBMT' THEN
        RAISE EXCEPTION 'Trade-Result: trade % is %, not submitted', p_trade_id, v_st_id;
    END IF;
    SELECT tt_name, tt_is_sell, s_name, cr_rate,
           (SELECT hs_qty FROM holding_summary WHERE hs_ca_id = out_acct_id AND hs_s_symb = out_symbol),
           (SELECT SUM(tx_rate) FROM taxrate, customer_taxrate WHERE tx_id = cx_tx_id AND cx_c_id = v_c_id)
        INTO v_tt_name, v_is_sell, v_s_name, v_comm_rate, v_hs_qty, v_tax_rate
        FROM trade_type, security, customer, commission_rate WHERE tt_id = v_tt_id AND s_symb = out_symbol
        AND c_id = v_c_id AND cr_c_tier = c_tier AND cr_tt_id = tt_id AND cr_ex_id = s_ex_id AND cr_from_qty <= out_qty
        AND cr_to_qty >= out_qty;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Trade-Result: no security, customer or commission rate for trade %', p_trade_id;
    END IF;
    -- frame 2: the holding summary first, then the lots the trade takes and the one it opens
    v_signed := CASE WHEN v_is_sell <> 0 THEN -out_qty ELSE out_qty END;
    v_closes := v_hs_qty IS NOT NULL AND v_hs_qty + v_signed = 0;
    IF v_hs_qty IS NULL THEN
        INSERT INTO holding_summary (hs_ca_id, hs_s_symb, hs_qty) VALUES (out_acct_id, out_symbol, v_signed);
    ELSIF NOT v_closes THEN
        UPDATE holding_summary SET hs_qty = hs_qty + v_signed WHERE hs_ca_id = out_acct_id AND hs_s_symb = out_symbol;
    END IF;
    SELECT * INTO v_lots FROM tpce_take_lots(out_acct_id, out_symbol, v_is_lifo, out_qty, p_price, v_is_sell,
                                             coalesce(v_hs_qty, 0));
    INSERT INTO holding_history (hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty)
        SELECT c.lot, p_trade_id, c.qty_before, c.qty_after
            FROM unnest(v_lots.out_lots, v_lots.out_before, v_lots.out_after) AS c(lot, qty_before, qty_after)
        UNION ALL SELECT p_trade_id, p_trade_id, 0, v_lots.out_left WHERE v_lots.out_left <> 0;
    DELETE FROM holding WHERE h_t_id = ANY(v_lots.out_closed);
    IF v_lots.out_partial IS NOT NULL THEN
        UPDATE holding SET h_qty = v_lots.out_partial_qty WHERE h_t_id = v_lots.out_partial;
    END IF;
    IF v_lots.out_left <> 0 THEN
        INSERT INTO holding (h_t_id, h_ca_id, h_s_symb, h_dts, h_price, h_qty)
            VALUES (p_trade_id, out_acct_id, out_symbol, p_now, p_price, v_lots.out_left);
    ELSIF v_closes THEN
        DELETE FROM holding_summary WHERE hs_ca_id = out_acct_id AND hs_s_symb = out_symbol;
    END IF;
    -- frames 3, 4 and 5
    out_tax := 0;
    IF v_lots.out_sell_value > v_lots.out_buy_value AND v_tax_st IN (1, 2) THEN
        out_tax := tpce_cents((v_lots.out_sell_value - v_lots.out_buy_value) * coalesce(v_tax_rate, 0));
    END IF;
    out_commission := tpce_cents(v_comm_rate / 100 * out_qty * p_price);
    UPDATE trade SET t_comm = out_commission, t_dts = p_now, t_st_id = 'CMPT', t_trade_price = p_price, t_tax = out_tax
        WHERE t_id = p_trade_id;
    INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES (p_trade_id, p_now, 'CMPT');
    UPDATE broker SET b_comm_total = b_comm_total + out_commission, b_num_trades = b_num_trades + 1 WHERE b_id = v_b_id;
    -- frame 6: what the account receives (negative: pays), less tax for tax status 1
    out_se_amount := CASE WHEN v_is_sell <> 0 THEN out_qty * p_price - (v_charge + out_commission)
                          ELSE -(out_qty * p_price + (v_charge + out_commission)) END;
    IF v_tax_st = 1 THEN
        out_se_amount := out_se_amount - out_tax;
    END IF;
    INSERT INTO settlement (se_t_id, se_cash_type, se_cash_due_date, se_amt)
        VALUES (p_trade_id, CASE WHEN v_is_cash <> 0 THEN 'Cash Account' ELSE 'Margin' END,
                CAST(p_now + INTERVAL '2 days' AS DATE), out_se_amount);
    IF v_is_cash <> 0 THEN
        UPDATE customer_account SET ca_bal = ca_bal + out_se_amount WHERE ca_id = out_acct_id;
        INSERT INTO cash_transaction (ct_t_id, ct_dts, ct_amt, ct_name)
            VALUES (p_trade_id, p_now, out_se_amount, substr(v_tt_name || ' ' || out_qty || ' shares of ' || v_s_name, 1, 100));
        out_acct_bal := out_acct_bal + out_se_amount;
    END IF;
END
$$
//

-- Market-Feed (market_feed.py): per symbol, in symbol order, its last price, volume,
-- lowest and highest price of the feed. LAST_TRADE's rows one by one in that order, then
-- the limit orders the prices trigger, locked in TR_T_ID order; those trades submitted,
-- their requests deleted, their history. Returns the triggered orders, by TR_T_ID.
CREATE FUNCTION tpce_market_feed(
    p_symbols VARCHAR[], p_prices NUMERIC[], p_volumes INTEGER[], p_lows NUMERIC[], p_highs NUMERIC[],
    p_now TIMESTAMP,
    OUT out_t_id BIGINT[], OUT out_symbol CHAR(15)[], OUT out_qty INTEGER[], OUT out_bid NUMERIC[],
    OUT out_type CHAR(3)[])
LANGUAGE plpgsql AS $$
BEGIN
    FOR n IN 1 .. cardinality(p_symbols) LOOP
        UPDATE last_trade SET lt_price = p_prices[n], lt_vol = lt_vol + p_volumes[n], lt_dts = p_now
            WHERE lt_s_symb = p_symbols[n];
    END LOOP;
    SELECT array_agg(r.tr_t_id), array_agg(r.tr_s_symb), array_agg(r.tr_qty), array_agg(r.tr_bid_price),
           array_agg(r.tr_tt_id)
        INTO out_t_id, out_symbol, out_qty, out_bid, out_type
        FROM (SELECT tr_t_id, tr_s_symb, tr_qty, tr_bid_price, tr_tt_id
                FROM trade_request, unnest(p_symbols, p_lows, p_highs) AS f(symb, low, high)
                WHERE tr_s_symb = f.symb AND ((tr_tt_id IN ('TSL', 'TLB') AND tr_bid_price >= f.low)
                                              OR (tr_tt_id = 'TLS' AND tr_bid_price <= f.high))
                ORDER BY tr_t_id FOR UPDATE OF trade_request) AS r;
    IF out_t_id IS NOT NULL THEN
        UPDATE trade SET t_dts = p_now, t_st_id = 'SBMT' WHERE t_id = ANY(out_t_id);
        DELETE FROM trade_request WHERE tr_t_id = ANY(out_t_id);
        INSERT INTO trade_history (th_t_id, th_dts, th_st_id) SELECT unnest(out_t_id), p_now, 'SBMT';
    END IF;
END
$$
//

-- Trade-Lookup (trade_lookup.py) and, with p_update 1, Trade-Update (trade_update.py,
-- frames 1-3 only): frame p_frame's trades, then for frames 1-3 their settlements with
-- cash transactions (by SE_T_ID) and all their status changes (the driver keeps the first
-- three of each), for frame 4 the holding history of the lots its trade touched. The
-- trades' columns are the union of the frames' (the driver takes its frame's); the
-- changes are worked out from the values read and written row by row in key order, as
-- the frames do: frame 1 the trades' executor names before the details are read, frames
-- 2 and 3 the settlements' cash types and the cash transactions' names after.
CREATE FUNCTION tpce_trade_lookup(
    p_update INTEGER, p_frame INTEGER, p_trade_ids BIGINT[], p_acct_id BIGINT, p_symbol VARCHAR, p_start TIMESTAMP,
    p_end TIMESTAMP,
    OUT o_t_id BIGINT[], OUT o_t_bid_price NUMERIC[], OUT o_t_exec_name VARCHAR[], OUT o_t_is_cash SMALLINT[],
    OUT o_tt_is_mrkt SMALLINT[], OUT o_t_trade_price NUMERIC[], OUT o_t_ca_id BIGINT[], OUT o_t_qty INTEGER[],
    OUT o_t_dts TIMESTAMP[], OUT o_t_tt_id CHAR(3)[], OUT o_tt_name VARCHAR[], OUT o_s_name VARCHAR[],
    OUT o_se_t_id BIGINT[], OUT o_se_amt NUMERIC[], OUT o_se_cash_due_date DATE[], OUT o_se_cash_type VARCHAR[],
    OUT o_ct_amt NUMERIC[], OUT o_ct_dts TIMESTAMP[], OUT o_ct_name VARCHAR[],
    OUT o_th_t_id BIGINT[], OUT o_th_dts TIMESTAMP[], OUT o_th_st_id CHAR(4)[],
    OUT o_hh_h_t_id BIGINT[], OUT o_hh_t_id BIGINT[], OUT o_hh_before_qty INTEGER[], OUT o_hh_after_qty INTEGER[])
LANGUAGE plpgsql AS $$
BEGIN
    IF p_frame = 1 THEN
        SELECT array_agg(r.t_id), array_agg(r.t_bid_price), array_agg(r.t_exec_name), array_agg(r.t_is_cash),
               array_agg(r.tt_is_mrkt), array_agg(r.t_trade_price)
            INTO o_t_id, o_t_bid_price, o_t_exec_name, o_t_is_cash, o_tt_is_mrkt, o_t_trade_price
            FROM (SELECT t_id, t_bid_price, t_exec_name, t_is_cash, tt_is_mrkt, t_trade_price FROM trade, trade_type
                    WHERE t_id = ANY(p_trade_ids) AND tt_id = t_tt_id ORDER BY t_id) AS r;
        IF p_update <> 0 THEN
            FOR n IN 1 .. coalesce(cardinality(o_t_id), 0) LOOP
                UPDATE trade SET t_exec_name = tpce_toggled(o_t_exec_name[n], ' X ', ' ') WHERE t_id = o_t_id[n];
            END LOOP;
        END IF;
    ELSIF p_frame = 2 THEN
        SELECT array_agg(r.t_id), array_agg(r.t_bid_price), array_agg(r.t_exec_name), array_agg(r.t_is_cash),
               array_agg(r.t_trade_price)
            INTO o_t_id, o_t_bid_price, o_t_exec_name, o_t_is_cash, o_t_trade_price
            FROM (SELECT t_id, t_bid_price, t_exec_name, t_is_cash, t_trade_price FROM trade
                    WHERE t_ca_id = p_acct_id AND t_dts >= p_start AND t_dts <= p_end ORDER BY t_dts, t_id LIMIT 20) AS r;
    ELSIF p_frame = 3 THEN
        SELECT array_agg(r.t_id), array_agg(r.t_ca_id), array_agg(r.t_exec_name), array_agg(r.t_is_cash),
               array_agg(r.t_trade_price), array_agg(r.t_qty), array_agg(r.t_dts), array_agg(r.t_tt_id),
               array_agg(r.tt_name), array_agg(r.s_name)
            INTO o_t_id, o_t_ca_id, o_t_exec_name, o_t_is_cash, o_t_trade_price, o_t_qty, o_t_dts, o_t_tt_id, o_tt_name,
                 o_s_name
            FROM (SELECT t_id, t_ca_id, t_exec_name, t_is_cash, t_trade_price, t_qty, t_dts, t_tt_id, tt_name, s_name
                    FROM trade, trade_type, security WHERE t_s_symb = p_symbol AND t_dts >= p_start AND t_dts <= p_end
                    AND tt_id = t_tt_id AND s_symb = t_s_symb ORDER BY t_dts, t_id LIMIT 20) AS r;
    ELSE
        SELECT array_agg(r.t_id) INTO o_t_id
            FROM (SELECT t_id FROM trade WHERE t_ca_id = p_acct_id AND t_dts >= p_start ORDER BY t_dts, t_id LIMIT 1) AS r;
        SELECT array_agg(r.hh_h_t_id), array_agg(r.hh_t_id), array_agg(r.hh_before_qty), array_agg(r.hh_after_qty)
            INTO o_hh_h_t_id, o_hh_t_id, o_hh_before_qty, o_hh_after_qty
            FROM (SELECT hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty FROM holding_history
                    WHERE hh_h_t_id IN (SELECT hh_h_t_id FROM holding_history WHERE hh_t_id = o_t_id[1])
                    ORDER BY hh_h_t_id, hh_t_id LIMIT 20) AS r;
        RETURN;
    END IF;
    IF o_t_id IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(r.se_t_id), array_agg(r.se_amt), array_agg(r.se_cash_due_date), array_agg(r.se_cash_type),
           array_agg(r.ct_amt), array_agg(r.ct_dts), array_agg(r.ct_name)
        INTO o_se_t_id, o_se_amt, o_se_cash_due_date, o_se_cash_type, o_ct_amt, o_ct_dts, o_ct_name
        FROM (SELECT se_t_id, se_amt, se_cash_due_date, se_cash_type, ct_amt, ct_dts, ct_name
                FROM settlement LEFT JOIN cash_transaction ON ct_t_id = se_t_id
                WHERE se_t_id = ANY(o_t_id) ORDER BY se_t_id) AS r;
    SELECT array_agg(r.th_t_id), array_agg(r.th_dts), array_agg(r.th_st_id) INTO o_th_t_id, o_th_dts, o_th_st_id
        FROM (SELECT th_t_id, th_dts, th_st_id FROM trade_history WHERE th_t_id = ANY(o_t_id)
                ORDER BY th_t_id, th_dts) AS r;
    IF p_update = 0 OR p_frame = 1 THEN
        RETURN;
    END IF;
    FOR n IN 1 .. coalesce(cardinality(o_se_t_id), 0) LOOP
        IF p_frame = 2 THEN
            UPDATE settlement SET se_cash_type = CASE btrim(o_se_cash_type[n]) WHEN 'Cash Account' THEN 'Cash'
                    WHEN 'Cash' THEN 'Cash Account' WHEN 'Margin Account' THEN 'Margin' WHEN 'Margin' THEN 'Margin Account'
                    ELSE 'Cash Account' END
                WHERE se_t_id = o_se_t_id[n];
        ELSIF o_ct_name[n] IS NOT NULL THEN
            UPDATE cash_transaction SET ct_name = tpce_toggled(o_ct_name[n], ' shares of ', ' Shares of ')
                WHERE ct_t_id = o_se_t_id[n];
        END IF;
    END LOOP;
END
$$
//

-- Security-Detail (security_detail.py): the security with its company, addresses and
-- exchange; three competitors; 20 financial quarters; p_max_rows days of DAILY_MARKET
-- from p_start_day; the last trade; two news items, with their text only when
-- p_access_lob (the LOB is not read otherwise).
CREATE FUNCTION tpce_security_detail(
    p_symbol VARCHAR, p_max_rows INTEGER, p_start_day DATE, p_access_lob INTEGER,
    OUT o_s_name VARCHAR, OUT o_co_id BIGINT, OUT o_co_name VARCHAR, OUT o_co_sp_rate CHAR(4), OUT o_co_ceo VARCHAR,
    OUT o_co_desc VARCHAR, OUT o_co_open_date DATE, OUT o_co_st_id CHAR(4), OUT o_ca_line1 VARCHAR,
    OUT o_ca_line2 VARCHAR, OUT o_ca_town VARCHAR, OUT o_ca_div VARCHAR, OUT o_ca_zc_code CHAR(12),
    OUT o_ca_ctry VARCHAR, OUT o_s_num_out BIGINT, OUT o_s_start_date DATE, OUT o_s_exch_date DATE,
    OUT o_s_pe NUMERIC, OUT o_s_52wk_high NUMERIC, OUT o_s_52wk_high_date DATE, OUT o_s_52wk_low NUMERIC,
    OUT o_s_52wk_low_date DATE, OUT o_s_dividend NUMERIC, OUT o_s_yield NUMERIC, OUT o_ea_div VARCHAR,
    OUT o_ea_ctry VARCHAR, OUT o_ea_line1 VARCHAR, OUT o_ea_line2 VARCHAR, OUT o_ea_town VARCHAR,
    OUT o_ea_zc_code CHAR(12), OUT o_ex_close SMALLINT, OUT o_ex_desc VARCHAR, OUT o_ex_name VARCHAR,
    OUT o_ex_num_symb INTEGER, OUT o_ex_open SMALLINT,
    OUT o_cp_co_name VARCHAR[], OUT o_cp_in_name VARCHAR[],
    OUT o_fi_year SMALLINT[], OUT o_fi_qtr SMALLINT[], OUT o_fi_qtr_start_date DATE[], OUT o_fi_revenue NUMERIC[],
    OUT o_fi_net_earn NUMERIC[], OUT o_fi_basic_eps NUMERIC[], OUT o_fi_dilut_eps NUMERIC[], OUT o_fi_margin NUMERIC[],
    OUT o_fi_inventory NUMERIC[], OUT o_fi_assets NUMERIC[], OUT o_fi_liability NUMERIC[], OUT o_fi_out_basic BIGINT[],
    OUT o_fi_out_dilut BIGINT[],
    OUT o_dm_date DATE[], OUT o_dm_close NUMERIC[], OUT o_dm_high NUMERIC[], OUT o_dm_low NUMERIC[],
    OUT o_dm_vol BIGINT[],
    OUT o_lt_price NUMERIC, OUT o_lt_open_price NUMERIC, OUT o_lt_vol BIGINT,
    OUT o_ni_item TEXT[], OUT o_ni_dts TIMESTAMP[], OUT o_ni_source VARCHAR[], OUT o_ni_author VARCHAR[],
    OUT o_ni_headline VARCHAR[], OUT o_ni_summary VARCHAR[])
LANGUAGE plpgsql AS $$
BEGIN
    SELECT s_name, co_id, co_name, co_sp_rate, co_ceo, co_desc, co_open_date, co_st_id, ca.ad_line1, ca.ad_line2,
           zca.zc_town, zca.zc_div, ca.ad_zc_code, ca.ad_ctry, s_num_out, s_start_date, s_exch_date, s_pe, s_52wk_high,
           s_52wk_high_date, s_52wk_low, s_52wk_low_date, s_dividend, s_yield, zea.zc_div, ea.ad_ctry, ea.ad_line1,
           ea.ad_line2, zea.zc_town, ea.ad_zc_code, ex_close, ex_desc, ex_name, ex_num_symb, ex_open
        INTO o_s_name, o_co_id, o_co_name, o_co_sp_rate, o_co_ceo, o_co_desc, o_co_open_date, o_co_st_id, o_ca_line1,
             o_ca_line2, o_ca_town, o_ca_div, o_ca_zc_code, o_ca_ctry, o_s_num_out, o_s_start_date, o_s_exch_date,
             o_s_pe, o_s_52wk_high, o_s_52wk_high_date, o_s_52wk_low, o_s_52wk_low_date, o_s_dividend, o_s_yield,
             o_ea_div, o_ea_ctry, o_ea_line1, o_ea_line2, o_ea_town, o_ea_zc_code, o_ex_close, o_ex_desc, o_ex_name,
             o_ex_num_symb, o_ex_open
        FROM security, company, address ca, address ea, zip_code zca, zip_code zea, exchange
        WHERE s_symb = p_symbol AND co_id = s_co_id AND ca.ad_id = co_ad_id AND ea.ad_id = ex_ad_id
        AND ex_id = s_ex_id AND zca.zc_code = ca.ad_zc_code AND zea.zc_code = ea.ad_zc_code;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Security-Detail: no security %', p_symbol;
    END IF;
    SELECT array_agg(r.co_name), array_agg(r.in_name) INTO o_cp_co_name, o_cp_in_name
        FROM (SELECT co_name, in_name FROM company_competitor, company, industry
                WHERE cp_co_id = o_co_id AND co_id = cp_comp_co_id AND in_id = cp_in_id
                ORDER BY cp_comp_co_id LIMIT 3) AS r;
    SELECT array_agg(r.fi_year), array_agg(r.fi_qtr), array_agg(r.fi_qtr_start_date), array_agg(r.fi_revenue),
           array_agg(r.fi_net_earn), array_agg(r.fi_basic_eps), array_agg(r.fi_dilut_eps), array_agg(r.fi_margin),
           array_agg(r.fi_inventory), array_agg(r.fi_assets), array_agg(r.fi_liability), array_agg(r.fi_out_basic),
           array_agg(r.fi_out_dilut)
        INTO o_fi_year, o_fi_qtr, o_fi_qtr_start_date, o_fi_revenue, o_fi_net_earn, o_fi_basic_eps, o_fi_dilut_eps,
             o_fi_margin, o_fi_inventory, o_fi_assets, o_fi_liability, o_fi_out_basic, o_fi_out_dilut
        FROM (SELECT fi_year, fi_qtr, fi_qtr_start_date, fi_revenue, fi_net_earn, fi_basic_eps, fi_dilut_eps,
                     fi_margin, fi_inventory, fi_assets, fi_liability, fi_out_basic, fi_out_dilut
                FROM financial WHERE fi_co_id = o_co_id ORDER BY fi_year, fi_qtr LIMIT 20) AS r;
    SELECT array_agg(r.dm_date), array_agg(r.dm_close), array_agg(r.dm_high), array_agg(r.dm_low), array_agg(r.dm_vol)
        INTO o_dm_date, o_dm_close, o_dm_high, o_dm_low, o_dm_vol
        FROM (SELECT dm_date, dm_close, dm_high, dm_low, dm_vol FROM daily_market
                WHERE dm_s_symb = p_symbol AND dm_date >= p_start_day ORDER BY dm_date LIMIT p_max_rows) AS r;
    SELECT lt_price, lt_open_price, lt_vol INTO o_lt_price, o_lt_open_price, o_lt_vol
        FROM last_trade WHERE lt_s_symb = p_symbol;
    SELECT array_agg(r.ni_item), array_agg(r.ni_dts), array_agg(r.ni_source), array_agg(r.ni_author),
           array_agg(r.ni_headline), array_agg(r.ni_summary)
        INTO o_ni_item, o_ni_dts, o_ni_source, o_ni_author, o_ni_headline, o_ni_summary
        FROM (SELECT CASE WHEN p_access_lob <> 0 THEN ni_item END AS ni_item, ni_dts, ni_source, ni_author,
                     ni_headline, ni_summary
                FROM news_xref, news_item WHERE ni_id = nx_ni_id AND nx_co_id = o_co_id
                ORDER BY ni_dts DESC, ni_id LIMIT 2) AS r;
END
$$
//

-- Customer-Position (customer_position.py): the customer by id, or by tax id when
-- p_cust_id is 0; its accounts (at most 10, least valuable first) with their balance
-- and holdings' market value; with p_get_history, the 10 latest trades of account
-- number p_acct_index (modulo how many) with their status changes, newest first.
CREATE FUNCTION tpce_customer_position(
    p_cust_id BIGINT, p_tax_id VARCHAR, p_get_history INTEGER, p_acct_index INTEGER,
    OUT o_c_id BIGINT, OUT o_c_st_id CHAR(4), OUT o_c_l_name VARCHAR, OUT o_c_f_name VARCHAR, OUT o_c_m_name CHAR(1),
    OUT o_c_gndr CHAR(1), OUT o_c_tier SMALLINT, OUT o_c_dob DATE, OUT o_c_ad_id BIGINT, OUT o_c_ctry_1 VARCHAR,
    OUT o_c_area_1 VARCHAR, OUT o_c_local_1 VARCHAR, OUT o_c_ext_1 VARCHAR, OUT o_c_ctry_2 VARCHAR,
    OUT o_c_area_2 VARCHAR, OUT o_c_local_2 VARCHAR, OUT o_c_ext_2 VARCHAR, OUT o_c_ctry_3 VARCHAR,
    OUT o_c_area_3 VARCHAR, OUT o_c_local_3 VARCHAR, OUT o_c_ext_3 VARCHAR, OUT o_c_email_1 VARCHAR,
    OUT o_c_email_2 VARCHAR,
    OUT o_ca_id BIGINT[], OUT o_ca_bal NUMERIC[], OUT o_assets NUMERIC[],
    OUT o_t_id BIGINT[], OUT o_t_s_symb CHAR(15)[], OUT o_t_qty INTEGER[], OUT o_st_name CHAR(10)[],
    OUT o_th_dts TIMESTAMP[])
LANGUAGE plpgsql AS $$
DECLARE
    v_customer RECORD;
BEGIN
    IF p_cust_id = 0 THEN
        SELECT * INTO v_customer FROM customer WHERE c_tax_id = p_tax_id;
    ELSE
        SELECT * INTO v_customer FROM customer WHERE c_id = p_cust_id;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Customer-Position: no customer %', coalesce(nullif(p_tax_id, ''), p_cust_id::text);
    END IF;
    SELECT v_customer.c_id, v_customer.c_st_id, v_customer.c_l_name, v_customer.c_f_name, v_customer.c_m_name,
           v_customer.c_gndr, v_customer.c_tier, v_customer.c_dob, v_customer.c_ad_id, v_customer.c_ctry_1,
           v_customer.c_area_1, v_customer.c_local_1, v_customer.c_ext_1, v_customer.c_ctry_2, v_customer.c_area_2,
           v_customer.c_local_2, v_customer.c_ext_2, v_customer.c_ctry_3, v_customer.c_area_3, v_customer.c_local_3,
           v_customer.c_ext_3, v_customer.c_email_1, v_customer.c_email_2
        INTO o_c_id, o_c_st_id, o_c_l_name, o_c_f_name, o_c_m_name, o_c_gndr, o_c_tier, o_c_dob, o_c_ad_id, o_c_ctry_1,
             o_c_area_1, o_c_local_1, o_c_ext_1, o_c_ctry_2, o_c_area_2, o_c_local_2, o_c_ext_2, o_c_ctry_3,
             o_c_area_3, o_c_local_3, o_c_ext_3, o_c_email_1, o_c_email_2;
    SELECT array_agg(r.ca_id), array_agg(r.ca_bal), array_agg(r.assets) INTO o_ca_id, o_ca_bal, o_assets
        FROM (SELECT ca_id, ca_bal, COALESCE(SUM(hs_qty * lt_price), 0) AS assets
                FROM customer_account LEFT JOIN holding_summary ON hs_ca_id = ca_id
                LEFT JOIN last_trade ON lt_s_symb = hs_s_symb
                WHERE ca_c_id = o_c_id GROUP BY ca_id, ca_bal ORDER BY assets, ca_id LIMIT 10) AS r;
    IF p_get_history = 0 OR o_ca_id IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(r.t_id), array_agg(r.t_s_symb), array_agg(r.t_qty), array_agg(r.st_name), array_agg(r.th_dts)
        INTO o_t_id, o_t_s_symb, o_t_qty, o_st_name, o_th_dts
        FROM (SELECT t_id, t_s_symb, t_qty, st_name, th_dts
                FROM (SELECT t_id AS id FROM trade WHERE t_ca_id = o_ca_id[p_acct_index % cardinality(o_ca_id) + 1]
                        ORDER BY t_dts DESC LIMIT 10) latest, trade, trade_history, status_type
                WHERE t_id = latest.id AND th_t_id = t_id AND st_id = th_st_id ORDER BY th_dts DESC LIMIT 30) AS r;
END
$$
//
