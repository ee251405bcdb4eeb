'use strict';

const assert = require('node:assert');
const { slugify } = require('../src/slug');

assert.strictEqual(slugify('Hello World'), 'hello-world');
assert.strictEqual(slugify('  Many   spaces  '), 'many-spaces');
assert.strictEqual(slugify('Crème brûlée'), 'creme-brulee');
assert.strictEqual(slugify('Ärger über Öl'), 'arger-uber-ol');
console.log('all slug tests passed');
