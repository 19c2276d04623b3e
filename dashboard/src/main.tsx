import { render } from 'preact';
import { App } from './app.tsx';
import { entryFromPath } from './route.ts';
import './style.css';

const entry = entryFromPath(location.pathname, location.search);
if (entry) history.replaceState(null, '', entry);
render(<App />, document.getElementById('app')!);
