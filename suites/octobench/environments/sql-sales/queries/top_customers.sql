-- purpose: the three customers with the highest total spend, highest first
SELECT c.name, o.amount_cents AS total_cents
FROM customers AS c
JOIN orders AS o ON o.customer_id = c.id
ORDER BY total_cents DESC
LIMIT 3;
