'use strict';

/**
 * Turn a title into a URL slug: lower case, ASCII letters and digits, words joined by '-'.
 * @param {string} title
 * @returns {string}
 */
function slugify(title) {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

module.exports = { slugify };
