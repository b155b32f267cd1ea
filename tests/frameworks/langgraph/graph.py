"""A LangGraph graph driven by LangChain's fake chat models (no LLM, no network).

Served by `langgraph dev` (see server.py and langgraph.json; the graph id is `agent`). A word
of the latest user text picks the scenario:

* `tools`: FakeMessagesListChatModel answers with one AIMessage that calls
  get_weather(city="Paris") with id call-1; the ToolNode runs the tool; then
  GenericFakeChatModel streams "It is 21 °C and sunny in Paris." token by token.
* `interrupt`: the `approval` node calls `interrupt({...})`, so the run stops and the task ends
  input-required; resuming with `{"resume": {"approved": true}}` streams "Booked the flight."
  (or "Not booked." for anything else).
* `a2ui`: FakeMessagesListChatModel calls show_booking_form() with id call-a2ui; the tool returns
  a JSON string holding a list of three A2UI v0.9 messages for surface "booking" (createSurface,
  updateComponents, updateDataModel); then GenericFakeChatModel streams "Here is the booking
  form.". server.py sets A2A_A2UI_ENABLED=true and A2A_A2UI_TOOL_CALL_RESULTS=show_booking_form,
  so langgraph-api turns that result into A2UI DataParts when the request activates the A2UI
  extension (header `A2A-Extensions`/`X-A2A-Extensions: https://a2ui.org/a2a-extension/a2ui/v0.9`).
* anything else: GenericFakeChatModel streams "Hello from the scripted LangGraph agent.".
"""
from __future__ import annotations

import json
from typing import Literal

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel, GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt


@tool
def get_weather(city: str) -> dict:
    """Returns the current weather of a city."""
    return {'temp_c': 21, 'sky': 'sunny'}


BOOKING_CATALOG = 'https://a2ui.org/specification/v0_9/basic_catalog.json'

# A2UI v0.9 server-to-client messages for one surface. langgraph-api validates each against its
# vendored server_to_client.json (every message needs "version":"v0.9"; component bodies are not
# checked) and drops invalid ones. A list becomes one DataPart per message.
BOOKING_FORM = [
    {'version': 'v0.9', 'createSurface': {'surfaceId': 'booking', 'catalogId': BOOKING_CATALOG}},
    {'version': 'v0.9', 'updateComponents': {'surfaceId': 'booking', 'components': [
        {'id': 'root', 'component': 'Column', 'children': ['title', 'name', 'date', 'submit']},
        {'id': 'title', 'component': 'Text', 'text': 'Book a table', 'variant': 'h2'},
        {'id': 'name', 'component': 'TextField', 'label': 'Name', 'value': {'path': '/name'}},
        {'id': 'date', 'component': 'TextField', 'label': 'Date', 'value': {'path': '/date'}},
        {'id': 'submit-label', 'component': 'Text', 'text': 'Book'},
        {'id': 'submit', 'component': 'Button', 'child': 'submit-label',
         'action': {'event': {'name': 'book', 'context': {'name': {'path': '/name'},
                                                          'date': {'path': '/date'}}}}},
    ]}},
    {'version': 'v0.9', 'updateDataModel': {'surfaceId': 'booking', 'path': '/',
                                            'value': {'name': '', 'date': '2026-12-24'}}},
]


@tool
def show_booking_form() -> str:
    """Shows a booking form (A2UI v0.9 messages as a JSON string)."""
    return json.dumps(BOOKING_FORM)


def _streamed(text: str) -> GenericFakeChatModel:
    # A fresh model per call: GenericFakeChatModel consumes its iterator.
    return GenericFakeChatModel(messages=iter([AIMessage(content=text)]))


def _last_user_text(state: MessagesState) -> str:
    for message in reversed(state['messages']):
        if isinstance(message, HumanMessage):
            return message.text if isinstance(message.text, str) else str(message.content)
    return ''


def _scenario(state: MessagesState) -> str:
    text = _last_user_text(state).lower()
    for word in ('tools', 'interrupt', 'a2ui'):
        if word in text:
            return word
    return 'hello'


async def agent(state: MessagesState) -> dict:
    last = state['messages'][-1]
    if isinstance(last, ToolMessage):
        text = ('Here is the booking form.' if last.name == 'show_booking_form'
                else 'It is 21 °C and sunny in Paris.')
        reply = await _streamed(text).ainvoke(state['messages'])
    elif _scenario(state) == 'tools':
        model = FakeMessagesListChatModel(responses=[AIMessage(content='', tool_calls=[
            {'name': 'get_weather', 'args': {'city': 'Paris'}, 'id': 'call-1', 'type': 'tool_call'}])])
        reply = await model.ainvoke(state['messages'])
    elif _scenario(state) == 'a2ui':
        model = FakeMessagesListChatModel(responses=[AIMessage(content='', tool_calls=[
            {'name': 'show_booking_form', 'args': {}, 'id': 'call-a2ui', 'type': 'tool_call'}])])
        reply = await model.ainvoke(state['messages'])
    else:
        reply = await _streamed('Hello from the scripted LangGraph agent.').ainvoke(state['messages'])
    return {'messages': [reply]}


async def approval(state: MessagesState) -> dict:
    answer = interrupt({'question': 'Book the flight to Paris?', 'amount': 5})
    approved = isinstance(answer, dict) and answer.get('approved') is True
    reply = await _streamed('Booked the flight.' if approved else 'Not booked.').ainvoke(state['messages'])
    return {'messages': [reply]}


def route_start(state: MessagesState) -> Literal['agent', 'approval']:
    return 'approval' if _scenario(state) == 'interrupt' else 'agent'


def route_agent(state: MessagesState) -> Literal['tools', '__end__']:
    last = state['messages'][-1]
    return 'tools' if isinstance(last, AIMessage) and last.tool_calls else END


builder = StateGraph(MessagesState)
builder.add_node('agent', agent)
builder.add_node('approval', approval)
builder.add_node('tools', ToolNode([get_weather, show_booking_form]))
builder.add_conditional_edges(START, route_start)
builder.add_conditional_edges('agent', route_agent)
builder.add_edge('tools', 'agent')
builder.add_edge('approval', END)
graph = builder.compile()
