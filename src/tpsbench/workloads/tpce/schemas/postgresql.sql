-- TPC-E-like schema for PostgreSQL: the 33 tables of TPC-E with its table and column
-- names in lower case, their primary keys, and the secondary indexes the transactions
-- need. Ids are BIGINT (TPC-E's IDENT_T and TRADE_T), money NUMERIC (exact decimals),
-- TPC-E's BOOLEAN columns SMALLINT 0/1 (one spelling on every database), NEWS_ITEM's
-- LOB TEXT. No constraints between tables: the loader writes them in parallel, in any order.
-- Statements after the "-- indexes" marker are run by the loader after the data is in.
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
