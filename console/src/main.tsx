import { render } from 'preact';
import { App } from './app';
import './style.css';
import './editor.css';

render(<App />, document.getElementById('app')!);
