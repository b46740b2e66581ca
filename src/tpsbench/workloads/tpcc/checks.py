"""The twelve TPC-C consistency conditions (clause 3.3.2), as portable SQL.

Each query selects the rows that violate its condition, so a pass is an empty result
and a failure says how many rows are wrong. The SQL avoids dialect features (row
values, GROUP BY ordinals, boolean comparisons) so the same text runs on SQLite,
PostgreSQL, MySQL/MariaDB and SQL Server. Money comparisons allow less than half a
cent of difference: exact on engines with decimals, and immune to SQLite's floats.
"""

from tpsbench.core.workload import Check

#: money values differ if they differ by half a cent or more
DIFFERS = "> 0.004"

DELIVERED_AMOUNT_BY_CUSTOMER = """
    SELECT o.o_w_id, o.o_d_id, o.o_c_id, SUM(ol.ol_amount) AS s
    FROM orders o JOIN order_line ol
      ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
    WHERE ol.ol_delivery_d IS NOT NULL
    GROUP BY o.o_w_id, o.o_d_id, o.o_c_id"""

CHECKS = [
    Check(1, "W_YTD = sum(D_YTD)", f"""
        SELECT w.w_id FROM warehouse w
        JOIN (SELECT d_w_id, SUM(d_ytd) AS s FROM district GROUP BY d_w_id) d ON d.d_w_id = w.w_id
        WHERE ABS(w.w_ytd - d.s) {DIFFERS}"""),
    Check(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", """
        SELECT d.d_w_id, d.d_id FROM district d
        JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS mo FROM orders GROUP BY o_w_id, o_d_id) o
          ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
        LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS mn FROM new_order GROUP BY no_w_id, no_d_id) n
          ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
        WHERE d.d_next_o_id - 1 <> o.mo OR n.mn <> o.mo"""),
    Check(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER) per district", """
        SELECT no_w_id, no_d_id FROM new_order GROUP BY no_w_id, no_d_id
        HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)"""),
    Check(4, "sum(O_OL_CNT) = count(ORDER-LINE) per district", """
        SELECT o.o_w_id, o.o_d_id FROM
          (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o
        JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) l
          ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id
        WHERE o.s <> l.c"""),
    Check(5, "O_CARRIER_ID is NULL exactly for orders in NEW-ORDER", """
        SELECT o.o_id FROM orders o
        LEFT JOIN new_order n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
        WHERE (o.o_carrier_id IS NULL AND n.no_o_id IS NULL)
           OR (o.o_carrier_id IS NOT NULL AND n.no_o_id IS NOT NULL)"""),
    Check(6, "O_OL_CNT = the order's ORDER-LINE rows", """
        SELECT o.o_id FROM orders o
        LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*) AS c FROM order_line
                   GROUP BY ol_w_id, ol_d_id, ol_o_id) l
          ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
        WHERE COALESCE(l.c, 0) <> o.o_ol_cnt"""),
    Check(7, "OL_DELIVERY_D is NULL exactly when O_CARRIER_ID is NULL", """
        SELECT ol.ol_o_id FROM order_line ol
        JOIN orders o ON o.o_w_id = ol.ol_w_id AND o.o_d_id = ol.ol_d_id AND o.o_id = ol.ol_o_id
        WHERE (ol.ol_delivery_d IS NULL AND o.o_carrier_id IS NOT NULL)
           OR (ol.ol_delivery_d IS NOT NULL AND o.o_carrier_id IS NULL)"""),
    Check(8, "W_YTD = sum(H_AMOUNT) per warehouse", f"""
        SELECT w.w_id FROM warehouse w
        LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id) h ON h.h_w_id = w.w_id
        WHERE ABS(w.w_ytd - COALESCE(h.s, 0)) {DIFFERS}"""),
    Check(9, "D_YTD = sum(H_AMOUNT) per district", f"""
        SELECT d.d_w_id, d.d_id FROM district d
        LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) h
          ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id
        WHERE ABS(d.d_ytd - COALESCE(h.s, 0)) {DIFFERS}"""),
    Check(10, "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)", f"""
        SELECT c.c_id FROM customer c
        LEFT JOIN ({DELIVERED_AMOUNT_BY_CUSTOMER}) d
          ON d.o_w_id = c.c_w_id AND d.o_d_id = c.c_d_id AND d.o_c_id = c.c_id
        LEFT JOIN (SELECT h_c_w_id, h_c_d_id, h_c_id, SUM(h_amount) AS s FROM history
                   GROUP BY h_c_w_id, h_c_d_id, h_c_id) h
          ON h.h_c_w_id = c.c_w_id AND h.h_c_d_id = c.c_d_id AND h.h_c_id = c.c_id
        WHERE ABS(c.c_balance - (COALESCE(d.s, 0) - COALESCE(h.s, 0))) {DIFFERS}"""),
    Check(11, "count(ORDER) - count(NEW-ORDER) = 2100 per district (only before any run)", """
        SELECT o.o_w_id, o.o_d_id FROM
          (SELECT o_w_id, o_d_id, COUNT(*) AS c FROM orders GROUP BY o_w_id, o_d_id) o
        LEFT JOIN (SELECT no_w_id, no_d_id, COUNT(*) AS c FROM new_order GROUP BY no_w_id, no_d_id) n
          ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id
        WHERE o.c - COALESCE(n.c, 0) <> 2100""", holds_after_run=False),
    Check(12, "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)", f"""
        SELECT c.c_id FROM customer c
        LEFT JOIN ({DELIVERED_AMOUNT_BY_CUSTOMER}) d
          ON d.o_w_id = c.c_w_id AND d.o_d_id = c.c_d_id AND d.o_c_id = c.c_id
        WHERE ABS(c.c_balance + c.c_ytd_payment - COALESCE(d.s, 0)) {DIFFERS}"""),
]
