import { greet } from './greet.js';

greet('test');
