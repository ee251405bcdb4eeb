-- purpose: revenue per month in cents, oldest month first
SELECT strftime('%Y-%m', o.ordered_on) AS month,
       SUM(o.amount_cents) AS revenue_cents
FROM orders AS o
GROUP BY month
ORDER BY month;
