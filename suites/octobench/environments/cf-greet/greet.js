'use strict';

function greet(name) {
  return 'Hello, ' + name + '!';
}

module.exports = { greet };
