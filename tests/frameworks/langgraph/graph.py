"""A LangGraph graph driven by LangChain's fake chat models (no LLM, no network).

Served by `langgraph dev` (see server.py and langgraph.json; the graph id is `agent`). A word
of the latest user text picks the scenario:

* `tools`: FakeMessagesListChatModel answers with one AIMessage that calls
  get_weather(city="Paris") with id call-1; the ToolNode runs the tool; then
  GenericFakeChatModel streams "It is 21 °C and sunny in Paris." token by token.
* `interrupt`: the `approval` node calls `interrupt({...})`, so the run stops and the task ends
  input-required; resuming with `{"resume": {"approved": true}}` streams "Booked the flight."
  (or "Not booked." for anything else).
* anything else: GenericFakeChatModel streams "Hello from the scripted LangGraph agent.".
"""
from __future__ import annotations

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
    for word in ('tools', 'interrupt'):
        if word in text:
            return word
    return 'hello'


async def agent(state: MessagesState) -> dict:
    last = state['messages'][-1]
    if isinstance(last, ToolMessage):
        reply = await _streamed('It is 21 °C and sunny in Paris.').ainvoke(state['messages'])
    elif _scenario(state) == 'tools':
        model = FakeMessagesListChatModel(responses=[AIMessage(content='', tool_calls=[
            {'name': 'get_weather', 'args': {'city': 'Paris'}, 'id': 'call-1', 'type': 'tool_call'}])])
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
builder.add_node('tools', ToolNode([get_weather]))
builder.add_conditional_edges(START, route_start)
builder.add_conditional_edges('agent', route_agent)
builder.add_edge('tools', 'agent')
builder.add_edge('approval', END)
graph = builder.compile()
